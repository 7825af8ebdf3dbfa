"""Property: random submission trees (links anywhere, special files, odd and undecodable names, huge
sparse files, random and deeply nested notebook JSON, random bytes as modules) graded together with
an honest control student. Whatever the tree: the batch finishes with exit 0, every student has a
results.json, the control's result is bit-identical to its clean-run result, nothing is written
outside the output folder, and the trusted process's peak memory stays within a margin of a clean
run's. Few examples here (each is one `grade` run); `benchmarks/intake_soak.py` runs many."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MODULES, ROOT, solutions_as_submission

RSS_MARGIN_MB = 300
GRADE = (
    "import resource, sys\nfrom grader.cli import main\ncode = main(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))\n"
    "sys.exit(code)\n"
)
LINK_TARGETS = [
    "/etc/shadow",
    "/proc/self/environ",
    "/proc/self/mem",
    "/dev/zero",
    "/proc/self/cwd/solutions",
    f"/proc/self/cwd/solutions/{MODULES[0]}.py",
    str(ROOT / "solutions" / f"{MODULES[2]}.py"),
    f"../honest/{MODULES[1]}.py",
    "../honest",
    "nowhere",
    ".",
    "..",
    "loop",
]
SPARSE_SIZES = [600 * 1024, 9 * 1024**2, 2 * 1024**3]


# -- what a tree is made of -------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # bytes | json | deep | sparse | link | fifo | folder | hardlink | solution
    data: object = None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25,
)
cell = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["code", "markdown"])},
    optional={
        "source": st.sampled_from(
            [f"# module: {m}\nX = 1" for m in MODULES] + ["def helper():\n    return 1", "1" + "+1" * 5000]
        )
        | json_values,
        "metadata": st.fixed_dictionaries({}, optional={"tags": json_values, "nbgrader": json_values}) | json_values,
    },
)
notebook_json = st.one_of(
    json_values,
    st.fixed_dictionaries({"cells": st.lists(cell, max_size=5) | json_values}),
    st.fixed_dictionaries({"worksheets": json_values}),
)
file_names = st.one_of(
    st.sampled_from([f"{m}.py" for m in MODULES] + [f"{m}.ipynb" for m in MODULES] + ["chapter.ipynb"]),
    st.text(min_size=1, max_size=12).map(lambda t: t + st_suffix(t)),
)


def st_suffix(text: str) -> str:
    return ".ipynb" if len(text) % 2 else ".py"


def usable(name: str) -> bool:
    return (
        bool(name)
        and "/" not in name
        and "\0" not in name
        and not name.startswith(".")
        and name != "honest"
        and len(os.fsencode(name)) < 200
    )


entries = st.one_of(
    st.builds(Entry, file_names, st.just("bytes"), st.binary(max_size=512)),
    st.builds(Entry, file_names, st.just("json"), notebook_json),
    st.builds(Entry, file_names, st.just("deep"), st.integers(500, 200_000)),
    st.builds(Entry, file_names, st.just("sparse"), st.sampled_from(SPARSE_SIZES)),
    st.builds(Entry, file_names, st.just("link"), st.sampled_from(LINK_TARGETS)),
    st.builds(Entry, file_names, st.sampled_from(["fifo", "folder", "hardlink", "solution"])),
).filter(lambda e: usable(e.name))
folder_names = st.one_of(
    st.text(min_size=1, max_size=16),
    st.binary(min_size=1, max_size=16).map(os.fsdecode),
    st.sampled_from(
        ["gradebook.csv", "summary.html", "results.json", "=1+1", "CON", "-x", "Gradebook.CSV", "a\nb", "\u202etxt.exe"]
    ),
).filter(usable)
students = st.dictionaries(
    folder_names,
    st.one_of(st.lists(entries, max_size=5, unique_by=lambda e: e.name), st.sampled_from(LINK_TARGETS)),
    min_size=1,
    max_size=4,
)


def materialise(klass: Path, tree: dict, outside: Path) -> None:
    solutions_as_submission(klass / "honest")
    for name, content in tree.items():
        folder = klass / name
        if isinstance(content, str):  # the student "folder" is a link
            folder.symlink_to(content if content != "loop" else name)
            continue
        folder.mkdir()
        for entry in content:
            path = folder / entry.name
            if entry.kind == "bytes":
                path.write_bytes(entry.data)
            elif entry.kind == "json":
                path.write_text(json.dumps(entry.data))
            elif entry.kind == "deep":
                path.write_text("[" * entry.data)
            elif entry.kind == "sparse":
                with open(path, "wb") as handle:
                    handle.truncate(entry.data)
            elif entry.kind == "link":
                path.symlink_to(entry.data if entry.data != "loop" else entry.name)
            elif entry.kind == "fifo":
                os.mkfifo(path)
            elif entry.kind == "folder":
                path.mkdir()
            elif entry.kind == "hardlink":
                os.link(outside, path)
            elif entry.kind == "solution":
                module = entry.name.rsplit(".", 1)[0]
                source = (klass / "honest" / f"{module}.py") if module in MODULES else None
                path.write_text(source.read_text() if source else "X = 1\n")


# -- one run -------------------------------------------------------------------------------------


def grade_in_subprocess(klass: Path, out: Path, rss: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", GRADE, str(rss), str(klass), "--out", str(out), "--quiet", "--jobs", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )


def snapshot(root: Path, *skip: Path) -> dict[str, tuple]:
    seen = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder) / d not in skip]
        for name in dirs + files:
            path = Path(folder) / name
            if path not in skip:
                info = path.lstat()
                seen[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return seen


def students_of(klass: Path) -> int:
    count = 0
    for entry in os.scandir(klass):
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            count += 1
        elif entry.is_symlink():
            try:
                count += stat.S_ISDIR(os.stat(entry.path).st_mode)
            except OSError:
                pass
    return count


def check_tree(tree: dict, base: Path, clean: dict) -> int:
    """Grade `tree` with the control and check every invariant; returns the run's peak RSS (MB)."""
    if base.exists():
        shutil.rmtree(base)
    klass, out = base / "class", base / "out"
    klass.mkdir(parents=True)
    outside = base / "outside.py"
    outside.write_text("SECRET = 'the kit'\n")
    materialise(klass, tree, outside)
    before = snapshot(base, out, base / "rss")
    run = grade_in_subprocess(klass, out, base / "rss")
    assert run.returncode == 0, run.stderr[-3000:]
    assert snapshot(base, out, base / "rss") == before, "something outside the output folder changed"
    documents = [json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*/results.json")]
    listing = sorted(p.name for p in out.iterdir())
    assert len(documents) == students_of(klass), (listing, run.stdout, run.stderr[-3000:])
    assert len({d["submission"] for d in documents}) == len(documents)
    assert (out / "gradebook.csv").is_file() and (out / "summary.html").is_file(), (
        listing,
        run.stdout,
        run.stderr[-3000:],
    )
    assert (out / "honest" / "results.json").read_bytes() == clean["results"]
    rss = int((base / "rss").read_text())
    assert rss <= clean["rss"] + RSS_MARGIN_MB, (rss, clean["rss"])
    return rss


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    base = tmp_path_factory.mktemp("clean")
    solutions_as_submission(base / "class" / "honest")
    run = grade_in_subprocess(base / "class", base / "out", base / "rss")
    assert run.returncode == 0, run.stderr[-3000:]
    return {
        "out": base / "out",
        "results": (base / "out" / "honest" / "results.json").read_bytes(),
        "rss": int((base / "rss").read_text()),
    }


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=students)
def test_random_trees_never_stop_the_batch_nor_touch_the_control(tree, clean, tmp_path_factory):
    check_tree(tree, tmp_path_factory.getbasetemp() / "property-tree", clean)
