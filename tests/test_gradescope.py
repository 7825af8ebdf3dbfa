"""The Gradescope autograder zip, run locally on a faithful /autograder layout.

The layout: the zip extracted to <root>/source, setup.sh run as Gradescope runs it (as root), with
apt-get and Python replaced by stand-ins that record what they are asked to install (no package
index here) while its own steps really run (the kit's wheel installed with pip, the answer key's
outputs computed, the permission lock on the kit), on a Python that holds the kit's dependencies but
not the kit, as setup.sh's virtual environment does.
"""

from __future__ import annotations

import io
import json
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import records
from grader.classroom.deployment import locate_submission, readable_by_others, runtime_requirements
from grader.classroom.gradescope import MAX_RESULTS_BYTES, VENV, run, to_gradescope
from grader.classroom.kit_wheel import wheel_name
from grader.i18n import Catalog
from grader.records import MODULE_SECTIONS, MODULES, GradeResult, SectionScore
from tests.conftest import ROOT, solutions_as_submission
from tests.platforms import (
    NO_BWRAP_PATH,
    WITHOUT_NAMESPACES,
    answer_key_lines,
    deps_only_python,
    environment,
    hunter_source,
    open_root,
    remove_root,
)

WHEEL = wheel_name()


@pytest.fixture(scope="module")
def deps_python():
    """A Python with the kit's dependencies but not the kit, readable by all as a platform's is."""
    venv_root = open_root("attention-kit-venv-")
    yield deps_only_python(venv_root / "deps-only")
    remove_root(venv_root)


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs") / "autograder.zip"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "gradescope", str(out)],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (out.parent / "stdout.txt").write_text(done.stdout)
    return out


def test_the_command_says_what_to_do_with_the_zip_next(autograder_zip):
    """As `grade prairielearn` does: where the zip goes in Gradescope."""
    lines = (autograder_zip.parent / "stdout.txt").read_text().splitlines()
    assert lines[-1] == Catalog("en").t("deploy.cli.gradescope-next", path=autograder_zip)
    for lang in ("en", "zh"):
        text = Catalog(lang).t("deploy.cli.gradescope-next", path=autograder_zip)
        assert "Configure Autograder" in text and str(autograder_zip) in text


def test_zip_holds_setup_run_autograder_and_the_kits_wheel(autograder_zip):
    """The kit travels as its wheel: no copy of its tree sits beside it."""
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        modes = {name: archive.getinfo(name).external_attr >> 16 for name in ("setup.sh", "run_autograder")}
        with archive.open(WHEEL) as wheel:
            in_wheel = set(zipfile.ZipFile(io.BytesIO(wheel.read())).namelist())
    assert names == {"setup.sh", "run_autograder", WHEEL}
    assert {
        "grader/run/__init__.py",
        "grader/classroom/gradescope.py",
        "grader/suites/hidden/pytest.ini",
        "grader/templates/i18n/zh/core.toml",
        "solutions/sec3_5_causal_attention.py",
        "attention_kit-0.1.0.dist-info/METADATA",
        "attention_kit-0.1.0.dist-info/RECORD",
    } <= in_wheel
    assert any(name.startswith("grader/suites/hidden/test_") for name in in_wheel)
    assert not any("__pycache__" in name or name.endswith(".pyc") or "/.cache/" in name for name in in_wheel)
    assert "torch==2.13.0" in setup and "download.pytorch.org/whl/cpu" in setup
    assert all(mode & stat.S_IXUSR for mode in modes.values())


# -- setup.sh, run as Gradescope runs it ----------------------------------------------------------

FAKE_PYTHON = """#!/bin/sh
# a stand-in for Python {version}
if [ "$1" = "-c" ]; then exit {too_old}; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cp "$VENV_PYTHON" "$3/bin/python"
  chmod +x "$3/bin/python"
  echo "venv {name} $3" >> "$LOG"
  exit 0
fi
exit 1
"""
# the virtual environment's Python: it records every call; what would come from a package index
# (torch, the dependencies) is only recorded, the rest (the kit's wheel, the answer key) really runs
VENV_PYTHON = """#!/bin/sh
echo "venv-python $*" >> "$LOG"
case "$*" in
  *"pip install"*--no-index*) ;;
  *"pip install"*) exit 0 ;;
esac
exec "$KIT_PYTHON" "$@"
"""
FAKE_APT = """#!/bin/sh
echo "apt-get $*" >> "$LOG"
for arg in "$@"; do
  if [ "$arg" = python3.11 ]; then
    printf '%s' "$PYTHON311" > "$SHIMS/python3.11"
    chmod +x "$SHIMS/python3.11"
  fi
done
"""


def dry_run_setup(source_root: Path, work: Path, system_python: str, python: Path) -> list[str]:
    """Run setup.sh with apt-get and Python replaced by recording stand-ins; returns what they recorded.
    `system_python` is the version of the image's python3: "3.10" (Ubuntu 22.04) or "3.12" (24.04);
    `python` runs what the virtual environment's Python really does here."""
    shims, tools = work / "shims", work / "tools"
    shims.mkdir(parents=True)
    tools.mkdir()
    for tool in ("chown", "chmod", "mkdir", "cat", "sh", "bash", "printf", "cp", "rm"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    too_old = "1" if system_python == "3.10" else "0"
    (shims / "python3").write_text(FAKE_PYTHON.format(version=system_python, too_old=too_old, name="python3"))
    (shims / "apt-get").write_text(FAKE_APT)
    (work / "venv-python").write_text(VENV_PYTHON)
    for shim in shims.iterdir():
        shim.chmod(0o755)
    log = work / "log"
    log.write_text("")
    env = {
        "PATH": f"{shims}:{tools}",
        "LOG": str(log),
        "SHIMS": str(shims),
        "AUTOGRADER_ROOT": str(source_root),
        "ATTENTION_KIT_VENV": str(work / "venv"),
        "PYTHON311": FAKE_PYTHON.format(version="3.11", too_old="0", name="python3.11"),
        "VENV_PYTHON": str(work / "venv-python"),
        "KIT_PYTHON": str(python),
    }
    done = subprocess.run(
        ["/bin/bash", str(source_root / "source" / "setup.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


@pytest.mark.parametrize("system_python, venv_from", [("3.10", "python3.11"), ("3.12", "python3")])
def test_setup_installs_the_wheel_apart_and_locks_the_kit(
    autograder_zip, deps_python, tmp_path, system_python, venv_from
):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    log = dry_run_setup(root, tmp_path / "work", system_python, deps_python)
    installs = [line for line in log if line.startswith("apt-get install")]
    assert any("bubblewrap" in line for line in installs)
    assert any("python3.11" in line for line in installs) == (system_python == "3.10")
    assert f"venv {venv_from} {tmp_path / 'work' / 'venv'}" in log
    calls = [line.split()[1:] for line in log if line.startswith("venv-python")]
    assert calls[0] == [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-cache-dir",
        "torch==2.13.0",
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
    ]
    assert calls[1][:5] == ["-m", "pip", "install", "--quiet", "--no-cache-dir"]
    assert calls[1][5:] == runtime_requirements()  # the dependencies, into the virtual environment
    kit = root / "source" / "kit"
    assert calls[2] == [
        *["-m", "pip", "install", "--quiet", "--no-cache-dir", "--no-deps", "--no-index"],
        *["--target", str(kit), str(root / "source" / WHEEL)],
    ]  # the kit, from its wheel, into a folder of its own
    assert calls[3:] == [["-s", "-m", "grader.answer_key"], ["-m", "compileall", "-q", str(kit)]]
    assert (kit / "grader" / "classroom" / "gradescope.py").is_file() and (kit / "solutions").is_dir()
    assert list((kit / "grader" / ".cache").glob("answer-key-*"))  # computed once, at build time
    assert not list((root / "source").glob("*.whl")) and sorted(p.name for p in (root / "source").iterdir()) == [
        "kit",
        "run_autograder",
        "setup.sh",
    ]
    assert readable_by_others(kit) is None
    assert all(not p.stat().st_mode & 0o077 for p in (root / "source").rglob("*") if not p.is_symlink())


def test_scripts_name_the_virtual_environment():
    from grader.classroom.gradescope import render_scripts

    scripts = render_scripts(lang="zh", visibility="after_due_date")
    assert f'VENV="${{ATTENTION_KIT_VENV:-{VENV}}}"' in scripts["setup.sh"]
    assert f'PYTHON="${{PYTHON:-{VENV}/bin/python}}"' in scripts["run_autograder"]
    assert "--lang zh --visibility after_due_date" in scripts["run_autograder"]
    assert 'chmod -R go-rwx "$SOURCE"' in scripts["setup.sh"]


# -- run_autograder on a faithful layout ----------------------------------------------------------


def autograder_root(set_up: Path) -> Path:
    """A fresh /autograder: a copy of `set_up/source` as setup.sh left it (modes kept), an empty
    submission and its metadata."""
    root = open_root("attention-kit-gs-")
    shutil.copytree(set_up / "source", root / "source", symlinks=True)
    (root / "submission").mkdir()
    (root / "submission_metadata.json").write_text('{"users": [{"email": "student@example.edu"}]}')
    return root


SCENARIOS = ("stub-3.3", "hostile", "hostile-old-layout", "linked-module")


@pytest.fixture(scope="module")
def graded(autograder_zip, deps_python, tmp_path_factory):
    """run_autograder from the zip, per scenario: {"results", "raw", "kit", "stdout", "root_mode"}."""
    python = deps_python
    set_up = open_root("attention-kit-gs-setup-")
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(set_up / "source")
    dry_run_setup(set_up, tmp_path_factory.mktemp("setup"), "3.10", python)  # once: the image
    outcomes = {}
    for scenario in SCENARIOS:
        root = autograder_root(set_up)
        try:
            env = environment(AUTOGRADER_ROOT=str(root), PYTHON=str(python))
            upload = root / "submission"
            kit = root / "source" / "kit"
            if scenario == "stub-3.3":  # the solutions, but 3.3 is the stub, in a folder inside the upload
                folder = solutions_as_submission(upload / "my-work")
                shutil.copy(
                    ROOT / "grader" / "exercises" / "sec3_3_simple_attention.py", folder / "sec3_3_simple_attention.py"
                )
                (upload / "__MACOSX").mkdir()
            elif scenario.startswith("hostile"):
                solutions_as_submission(upload)
                (upload / "sec3_3_simple_attention.py").write_text(hunter_source([str(root), str(kit)]))
                env["PATH"] = NO_BWRAP_PATH  # no bubblewrap, as in a container that cannot run it
                if scenario == "hostile-old-layout":  # the kit pip-installed into site-packages, as before
                    site = Path(
                        subprocess.run(
                            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True,
                            text=True,
                            check=True,
                        ).stdout.strip()
                    )
                    shutil.copytree(ROOT / "solutions", site / "solutions")
                    shutil.copytree(ROOT / "grader", site / "grader", ignore=shutil.ignore_patterns("__pycache__"))
            else:  # a module that is a link into the kit's answer key
                solutions_as_submission(upload)
                (upload / "sec3_5_causal_attention.py").unlink()
                (upload / "sec3_5_causal_attention.py").symlink_to(kit / "solutions" / "sec3_5_causal_attention.py")
            prefix = WITHOUT_NAMESPACES if scenario.startswith("hostile") else []
            done = subprocess.run(
                [*prefix, "/bin/bash", str(root / "source" / "run_autograder")],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            raw = (root / "results" / "results.json").read_bytes()
            kit_report = json.loads((root / "results" / "kit-report" / "results.json").read_text())
            outcomes[scenario] = {
                "results": json.loads(raw),
                "raw": raw.decode(),
                "kit": kit_report,
                "stdout": done.stdout,
                "root_mode": root.stat().st_mode & 0o777,
            }
        finally:
            if scenario == "hostile-old-layout":
                shutil.rmtree(site / "solutions", ignore_errors=True)
                shutil.rmtree(site / "grader", ignore_errors=True)
            remove_root(root)
    remove_root(set_up)
    return outcomes


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_results_json_has_gradescopes_fields(graded, scenario):
    results = graded[scenario]["results"]
    assert results["tests"]
    for test in results["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] == "visible"
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    assert results["output_format"] == "md" and results["output"]
    assert len(graded[scenario]["raw"].encode()) <= MAX_RESULTS_BYTES
    assert graded[scenario]["root_mode"] == 0o700  # /autograder was reachable by root only while grading


def test_scores_follow_the_kits_grading(graded):
    results, kit = graded["stub-3.3"]["results"], graded["stub-3.3"]["kit"]
    assert results["score"] == kit["score"] and kit["submission"] == "submission"
    sec3_3 = [t for t in results["tests"] if t["number"] == "3.3"]
    others = [t for t in results["tests"] if t["number"] != "3.3"]
    assert sec3_3 and all(t["score"] == 0 and t["output"] for t in sec3_3)
    assert all(t["score"] == t["max_score"] for t in others)
    assert "NotImplementedError" in sec3_3[0]["output"]


def test_a_hostile_submission_reads_nothing_of_the_kit(graded):
    outcome = graded["hostile"]
    tests = outcome["results"]["tests"]
    assert all(t["score"] == 0 for t in tests if t["number"] == "3.3")
    assert all(t["score"] == t["max_score"] for t in tests if t["number"] != "3.3")
    assert "HUNT: nothing" in outcome["raw"] and "HUNT: LEAK" not in outcome["raw"]
    assert not [line for line in answer_key_lines() if line in outcome["raw"]]
    # bubblewrap was really off, and the instructor's log says so; the kit itself is locked
    assert "bubblewrap" in outcome["stdout"] and "answer key is readable" not in outcome["stdout"]


def test_the_control_the_old_layout_leaked_the_answer_key(graded):
    """Proves that the hunt above can find the answer key: with the kit pip-installed into
    site-packages as setup.sh did before, and no bubblewrap, it reads the reference's source."""
    assert "HUNT: LEAK" in graded["hostile-old-layout"]["raw"]


def test_a_module_linked_into_the_kit_scores_nothing(graded):
    outcome = graded["linked-module"]
    tests = outcome["results"]["tests"]
    assert all(t["score"] == 0 for t in tests if t["number"] == "3.5")
    assert any("sec3_5_causal_attention.py" in n["detail"] for n in outcome["kit"]["integrity"])
    assert not [line for line in answer_key_lines() if line in outcome["raw"]]


# -- pieces ------------------------------------------------------------------------------------------


def test_no_submission_and_grader_failure_still_write_results(tmp_path, monkeypatch):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "notes.txt").write_text("hello")
    result = run(tmp_path)
    written = json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8"))
    assert written == result
    assert result["score"] == 0 and "No Chapter 3 module" in result["output"]

    import grader.classroom.gradescope as gradescope

    def broken(*args, **kwargs):
        raise RuntimeError("sandbox unavailable")

    monkeypatch.setattr(gradescope, "grade_upload", broken)
    (tmp_path / "submission" / "sec3_3_simple_attention.py").write_text("x = 1\n")
    result = run(tmp_path)
    assert result["score"] == 0 and "sandbox unavailable" in result["output"] and "grader" in result["output"]


def test_locate_submission_prefers_the_upload_itself(tmp_path):
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "sec3_5_causal_attention.py").write_text("")
    assert locate_submission(tmp_path) == tmp_path / "inner"
    (tmp_path / "sec3_3_simple_attention.py").write_text("")
    assert locate_submission(tmp_path) == tmp_path


def test_locate_submission_never_follows_a_link(tmp_path):
    elsewhere = solutions_as_submission(tmp_path / "elsewhere")
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "linked-folder").symlink_to(elsewhere, target_is_directory=True)
    assert locate_submission(upload) is None
    (tmp_path / "linked-upload").symlink_to(elsewhere, target_is_directory=True)
    assert locate_submission(tmp_path / "linked-upload") is None
    for skipped in (".hidden", "__MACOSX", "__pycache__"):
        (upload / skipped).mkdir()
        (upload / skipped / "sec3_3_simple_attention.py").write_text("")
    assert locate_submission(upload) is None
    deep = upload.joinpath(*"abcdefg")
    deep.mkdir(parents=True)
    (deep / "sec3_3_simple_attention.py").write_text("")
    assert locate_submission(upload) is None  # deeper than anyone zips a submission
    (upload / "a" / "b" / "sec3_3_simple_attention.py").write_text("")
    assert locate_submission(upload) == upload / "a" / "b"


def _outcome(i: int, status: str, message: str = "", misconception: str | None = None, module: str = MODULES[2]):
    max_points = float(1 + i % 3)
    return records.TestOutcome(
        f"{module}::test_{i}",
        module,
        f"test_{i}",
        MODULE_SECTIONS[module],
        status,
        max_points if status == "passed" else 0.0,
        max_points,
        message,
        misconception=misconception,
    )


def test_conversion_of_a_grading():
    tests = [_outcome(1, "passed"), _outcome(2, "failed", "values differ", "mask-inverted", MODULES[4])]
    result = GradeResult("s", "hash", 2.0, 5.0, [SectionScore("3.5", "t", 2.0, 5.0)], tests, [])
    converted = to_gradescope(result, Catalog("en"), visibility="after_published")
    assert converted["score"] == 2.0
    assert [t["score"] for t in converted["tests"]] == [2.0, 0.0]
    assert [t["max_score"] for t in converted["tests"]] == [2.0, 3.0]
    assert [t["number"] for t in converted["tests"]] == ["3.5", "Ex. 3.1"]  # the book's sections, no ids
    assert converted["tests"][1]["status"] == "failed"
    output = converted["tests"][1]["output"]
    assert "values differ" in output and "mask" in output and "Hint" in output
    assert {t["visibility"] for t in converted["tests"]} == {"after_published"}


_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=300) | st.builds(
    lambda piece, count: piece * count, st.text(max_size=6), st.integers(0, 300_000)
)


@settings(max_examples=40, deadline=None)
@given(messages=st.lists(_TEXT, min_size=1, max_size=70), name=_TEXT)
def test_any_text_gives_a_writable_results_json_within_1_mb(messages, name):
    tests = [_outcome(i, "failed", message, module=MODULES[i % 7]) for i, message in enumerate(messages)]
    top = sum(t.max_points for t in tests)
    result = GradeResult(name, "hash", 0.0, top, [SectionScore("3.5", name, 0.0, top)], tests, [])
    converted = to_gradescope(result, Catalog("zh"))
    raw = json.dumps(converted, indent=2, ensure_ascii=False).encode("utf-8")  # no lone surrogate survives
    assert len(raw) <= MAX_RESULTS_BYTES
    assert len(converted["tests"]) == len(messages) and converted["score"] == 0.0
    assert not any(ch in "".join(t["output"] for t in converted["tests"]) for ch in "\x1b\x00\r")
