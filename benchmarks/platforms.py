"""The grading platforms' entrypoints, one submission each, timed end to end.

    python benchmarks/platforms.py [--runs 5] [--platform prairielearn|gradescope|both] [--no-bwrap]

Builds the layouts the tests use (tests/platforms.py): PrairieLearn's image root (the kit as the
Dockerfile leaves it, /grade, a Python holding only the dependencies) and Gradescope's /autograder
(the zip extracted, setup.sh's permission lock applied), then runs the real entrypoint script
(attention-kit-grade, run_autograder) on the reference solutions, as a fresh container would, and
prints each run's wall time and CPU time (the entrypoint and everything it started: its sandbox
workers and their children) and the medians. On a shared machine the CPU time is the steadier
number. Not part of the test run.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.records import MODULES
from tests.platforms import NO_BWRAP_PATH, deps_only_python, environment, open_root, remove_root, sibling_imports

KIT_DIR = "opt/attention-kit"


def solutions(target: Path) -> None:
    for module in MODULES:
        (target / f"{module}.py").write_text(sibling_imports((ROOT / "solutions" / f"{module}.py").read_text()))


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and all it started) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def prairielearn_run(python: Path, written: Path, bwrap: bool) -> tuple[float, float]:
    root = open_root("attention-kit-bench-pl-")
    try:
        kit = root / KIT_DIR
        shutil.copytree(written / "grader-image" / "kit", kit)
        subprocess.run(["sh", "-c", f"{sys.executable} -m compileall -q {kit} && chmod -R go-rwx {kit}"], check=True)
        for folder in ("student", "tests", "data"):
            (root / "grade" / folder).mkdir(parents=True)
        shutil.copy(written / "questions" / "attention-ch3" / "tests" / "attention-kit.json", root / "grade" / "tests")
        solutions(root / "grade" / "student")
        env = environment(ATTENTION_KIT_DIR=str(kit), PYTHON=str(python), GRADE_ROOT=str(root / "grade"))
        if not bwrap:
            env["PATH"] = NO_BWRAP_PATH
        return timed(["/bin/sh", str(written / "grader-image" / "attention-kit-grade")], env)
    finally:
        remove_root(root)


def gradescope_run(python: Path, archive: Path, bwrap: bool) -> tuple[float, float]:
    root = open_root("attention-kit-bench-gs-")
    try:
        with zipfile.ZipFile(archive) as opened:
            opened.extractall(root / "source")
        source = root / "source"
        subprocess.run(
            ["sh", "-c", f"{sys.executable} -m compileall -q {source / 'kit'} && chmod -R go-rwx {source}"], check=True
        )
        (root / "submission").mkdir()
        solutions(root / "submission")
        env = environment(AUTOGRADER_ROOT=str(root), PYTHON=str(python))
        if not bwrap:
            env["PATH"] = NO_BWRAP_PATH
        return timed(["/bin/bash", str(root / "source" / "run_autograder")], env)
    finally:
        remove_root(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--platform", choices=("prairielearn", "gradescope", "both"), default="both")
    parser.add_argument("--no-bwrap", action="store_true", help="run as in a container where bubblewrap cannot run")
    args = parser.parse_args()
    venv_root = open_root("attention-kit-bench-venv-")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        python = deps_only_python(venv_root / "deps-only")
        subprocess.run(
            [sys.executable, "-m", "grader", "prairielearn", str(work / "pl")],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [sys.executable, "-m", "grader", "gradescope", str(work / "gs.zip")],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        platforms = ["prairielearn", "gradescope"] if args.platform == "both" else [args.platform]
        try:
            for platform in platforms:
                times = [
                    prairielearn_run(python, work / "pl", not args.no_bwrap)
                    if platform == "prairielearn"
                    else gradescope_run(python, work / "gs.zip", not args.no_bwrap)
                    for _ in range(args.runs)
                ]
                walls, cpus = [w for w, _ in times], [c for _, c in times]
                print(
                    f"{platform}: wall "
                    + ", ".join(f"{t:.1f}" for t in walls)
                    + f" s (median {statistics.median(walls):.2f} s); CPU "
                    + ", ".join(f"{t:.1f}" for t in cpus)
                    + f" s (median {statistics.median(cpus):.2f} s)"
                )
        finally:
            remove_root(venv_root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
