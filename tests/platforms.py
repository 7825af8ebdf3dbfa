"""Faithful grading-platform layouts for the Gradescope and PrairieLearn tests.

- `deps_only_python`: a Python whose site-packages hold the kit's dependencies but not the kit, as
  setup.sh's virtual environment and the PrairieLearn image have (the test venv's packages reach it
  through a plain .pth path line, so the kit's editable-install hook never runs there);
- `open_root`: a folder under /tmp that other users can traverse, as / is on a platform (pytest's
  own tmp folders are 0700 and would hide everything from the sandbox's uid for the wrong reason);
- `hunter_source`: a hostile student module that hunts for the answer key and the hidden suites
  everywhere a platform puts them and reports, through its import error, what it could read;
- `answer_key_lines`: lines that only the answer key and the hidden suites hold, to search any
  output for.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import venv
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
NO_BWRAP_PATH = "/nonexistent-attention-kit-test-path"  # a PATH on which no bubblewrap is found
# A command's prefix that runs it as root without CAP_SYS_ADMIN, as in a container that cannot run
# bubblewrap: no mount or IPC namespaces either (empty where not root or without setpriv)
WITHOUT_NAMESPACES = (
    [shutil.which("setpriv"), "--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]
    if os.getuid() == 0 and shutil.which("setpriv")
    else []
)


def deps_only_python(base: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(base)
    python = base / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site_packages / "attention_kit_test_dependencies.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")
    check = subprocess.run(
        [
            str(python),
            "-s",
            "-c",
            "import torch, jinja2, pytest, rich, nbformat, numpy\n"
            "import importlib.util as u\nassert u.find_spec('solutions') is None\n"
            "assert u.find_spec('grader') is None",
        ],
        capture_output=True,
        text=True,
        cwd=base,
    )
    assert check.returncode == 0, check.stderr
    return python


def open_root(prefix: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    root.chmod(0o755)
    return root


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def answer_key_lines() -> set[str]:
    """Lines (stripped, 30+ characters) of solutions/ and the hidden suites that appear nowhere a
    student may look: not in the stubs, the probes, the sandbox's code or the catalogues."""
    public = set()
    for folder in ("grader/exercises", "grader/probes", "grader/sandbox", "grader/templates"):
        for file in (ROOT / folder).rglob("*"):
            if file.is_file() and file.suffix in (".py", ".toml", ".j2", ".md"):
                public |= {line.strip() for line in file.read_text(encoding="utf-8").splitlines()}
    secret = set()
    for file in [*(ROOT / "solutions").glob("*.py"), *(ROOT / "grader" / "suites" / "hidden").glob("*.py")]:
        secret |= {line.strip() for line in file.read_text(encoding="utf-8").splitlines()}
    # a test's id ("module::test_name") is public: every results.json lists them
    test_id = re.compile(r'"\w+::test_\w+",?')
    return {line for line in secret - public if len(line) >= 30 and not test_id.fullmatch(line)}


HUNTER = r'''
"""A hostile submission: hunts for the answer key, the hidden suites and the reference's cached
outputs wherever a platform keeps them, then reports what it could read in its import error."""
import hashlib, importlib, os, site, stat, sys

_MARKERS = set(%(markers)r)
_PLACES = %(places)r
_TEXT = (".py", ".pyc", ".json", ".txt", ".toml", ".md", ".j2", ".csv", ".html", ".ini", ".cfg", "")
_found = []
_tries = 0


def _look(path):
    global _tries
    _tries += 1
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > (4 << 20):
            return
        if os.path.basename(path).startswith("answer-key-"):
            with open(path, "rb") as handle:
                handle.read(16)
            _found.append(path)
            return
        with open(path, "rb") as handle:
            data = handle.read()
    except Exception:
        return
    for line in data.decode("utf-8", "replace").splitlines():
        if hashlib.sha256(line.strip().encode()).hexdigest()[:16] in _MARKERS:
            _found.append(path)
            return


def _walk(top):
    for folder, dirs, names in os.walk(top):
        for name in names:
            if name.startswith("answer-key-") or os.path.splitext(name)[1] in _TEXT:
                _look(os.path.join(folder, name))


for place in _PLACES + ["/autograder", "/grade", "/opt/attention-kit"]:  # not its own scratch folder
    _walk(place)
for entry in sys.path + site.getsitepackages():
    for sub in ("solutions", "grader/suites", "kit/solutions", "attention-kit"):
        _walk(os.path.join(entry, sub))
for relative in ("solutions/sec3_5_causal_attention.py", "grader/suites/hidden/test_sec3_5_causal_attention.py"):
    _look(relative)
for name in ("solutions.sec3_5_causal_attention", "grader.suites.hidden.test_sec3_5_causal_attention"):
    try:
        _look(importlib.import_module(name).__file__)
    except Exception:
        pass
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for place in _PLACES:
        _look("/proc/%%s/root%%s/solutions/sec3_5_causal_attention.py" %% (pid, place))
    _look("/proc/%%s/cwd/solutions/sec3_5_causal_attention.py" %% pid)
    try:
        for fd in os.listdir("/proc/%%s/fd" %% pid):
            _look("/proc/%%s/fd/%%s" %% (pid, fd))
    except Exception:
        pass
if _found:
    raise RuntimeError("HUNT: LEAK " + " | ".join(sorted(set(_found))[:5]))
raise RuntimeError("HUNT: nothing (%%d tries)" %% _tries)
'''


def hunter_source(places: list[str]) -> str:
    markers = sorted(hashlib.sha256(line.encode()).hexdigest()[:16] for line in answer_key_lines())
    return HUNTER % {"markers": markers, "places": places}


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env.update(extra)
    return env


def sibling_imports(source: str) -> str:
    import re

    return re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M)
