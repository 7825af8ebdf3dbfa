"""Throughput: the grader on N submissions against the baseline of one fresh pytest per submission.

    python benchmarks/throughput.py [--copies 1000] [--baseline-samples 8] [--jobs N] [--keep DIR]
                                    [--uncached-drawings]

Builds a class of N students by cycling through the example class (examples/class/; the
reference solutions when it is missing), each copy made unique with a comment so that nothing
is answered from a cache; grades it with `python -m grader CLASS --out OUT --quiet --force`
(fresh output folder: the reference and variant outputs are computed in the run); then runs
the same hidden suites the way a course usually does, `python -m pytest grader/suites/hidden -p
baseline_plugin --submission DIR` (benchmarks/baseline_plugin.py) once per submission (student
code imported in-process), on a sample of the submissions, as many at a time as the grader has
jobs. Prints submissions per second for both and their ratio.

Copies of one student draw the same heatmaps, and the reports draw each distinct heatmap grid
once per run, so copies find their drawings made more often than students of a real class do
(where the reference grids and correct submissions' grids still repeat). --uncached-drawings
turns that cache off: the worst case, every heatmap drawn anew. Not part of the test run. The
sandbox alone (its CPU time per submission, without pytest and reports): benchmarks/sandbox.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]


def templates() -> list[Path]:
    example = ROOT / "examples" / "class"
    students = sorted(p for p in example.iterdir() if p.is_dir()) if example.is_dir() else []
    if students:
        return students
    target = Path(tempfile.mkdtemp(prefix="throughput-solutions-")) / "solutions"
    target.mkdir()
    for module in MODULES:
        source = (ROOT / "solutions" / f"{module}.py").read_text()
        (target / f"{module}.py").write_text(re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M))
    return [target]


def build_class(target: Path, copies: int, sources: list[Path] | None = None) -> list[Path]:
    sources = sources or templates()
    students = []
    for index in range(copies):
        template = sources[index % len(sources)]
        student = target / f"{template.name}-{index:05d}"
        student.mkdir(parents=True)
        for file in template.iterdir():
            if file.suffix == ".py":
                (student / file.name).write_text(file.read_text() + f"\n# copy {index}\n")
        students.append(student)
    return students


UNCACHED_DRAWINGS = """
import sys
import grader.report as report
report._attention_grid = report._attention_grid.__wrapped__
report._grid_of_rows = report._grid_of_rows.__wrapped__
from grader.cli import main
sys.exit(main())
"""


def run_grader(cls: Path, out: Path, jobs: int, uncached_drawings: bool = False) -> float:
    command = ["-c", UNCACHED_DRAWINGS] if uncached_drawings else ["-m", "grader"]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *command, str(cls), "--out", str(out), "--quiet", "--force", "--jobs", str(jobs)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def run_baseline(students: list[Path], jobs: int) -> float:
    def one(student: Path) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "grader/suites/hidden",
                "-p",
                "baseline_plugin",
                "--submission",
                str(student),
                "-q",
                "-p",
                "no:cacheprovider",
                "-c",
                "grader/suites/hidden/pytest.ini",
                "--rootdir",
                "grader/suites/hidden",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONPATH=str(ROOT / "benchmarks")),
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as executor:
        list(executor.map(one, students))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--baseline-samples", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", type=Path, help="build the class and reports here and keep them")
    parser.add_argument(
        "--uncached-drawings",
        action="store_true",
        help="draw every heatmap anew (no reuse of identical grids): the worst case",
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="throughput-"))
    shutil.rmtree(work / "class", ignore_errors=True)
    shutil.rmtree(work / "reports", ignore_errors=True)
    sources = templates()
    students = build_class(work / "class", args.copies, sources)
    print(f"{len(students)} submissions from {len(sources)} templates, {args.jobs} jobs, {os.cpu_count()} cores")
    seconds = run_grader(work / "class", work / "reports", args.jobs, args.uncached_drawings)
    rate = len(students) / seconds
    print(
        f"grader:   {len(students)} submissions in {seconds:.1f} s = {rate:.2f} submissions/s"
        + (" (every heatmap drawn anew)" if args.uncached_drawings else "")
    )
    sample = students[: args.baseline_samples]
    baseline_seconds = run_baseline(sample, args.jobs)
    baseline_rate = len(sample) / baseline_seconds
    print(
        f"baseline: {len(sample)} submissions in {baseline_seconds:.1f} s = {baseline_rate:.2f} submissions/s "
        f"(one fresh pytest process each, in-process student code)"
    )
    print(f"speed-up: {rate / baseline_rate:.1f}x")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
