"""One submission from cold, as Gradescope and PrairieLearn grade every submission: `grade STUDENT
--out FRESH` (a fresh output folder, a fresh interpreter, the sandbox's workers started from
nothing) against `python -c "import torch"`, alternated, RUNS times each.

    python benchmarks/cold.py [--student examples/class/bob] [--runs 7]

Prints the wall-clock seconds of both (min and median) and their ratio, and the same for the CPU
time of each one's whole process tree (benchmarks/cpu.py; the grading run's includes its sandbox's
workers, which run beside it on an idle machine, so the CPU ratio is the higher one). Wall-clock
time depends on what else runs on the machine: the load average is printed with it. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu import measured

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", type=Path, default=ROOT / "examples" / "class" / "bob")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cold-"))
    torch_walls, torch_cpus, grade_walls, grade_cpus = [], [], [], []
    loads = []
    try:
        for index in range(args.runs):
            loads.append(os.getloadavg()[0])
            imported = measured([sys.executable, "-c", "import torch"])
            torch_walls.append(imported.wall)
            torch_cpus.append(imported.cpu)
            out = work / f"out-{index}"
            usage = measured(
                [sys.executable, "-m", "grader", str(args.student), "--out", str(out), "--quiet"],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
            )
            if usage.returncode != 0 or not (out / "feedback.html").is_file():
                raise SystemExit(f"grading {args.student} failed (status {usage.returncode})")
            grade_walls.append(usage.wall)
            grade_cpus.append(usage.cpu)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def spread(values: list[float]) -> str:
        return f"min {min(values):.2f} s, median {statistics.median(values):.2f} s"

    print(f'python -c "import torch": {spread(torch_walls)}; CPU {spread(torch_cpus)}')
    print(f"grade {args.student.name} (fresh output folder): {spread(grade_walls)}; CPU {spread(grade_cpus)}")
    print(
        f"ratio: {min(grade_walls) / min(torch_walls):.2f}x (min), "
        f"{statistics.median(grade_walls) / statistics.median(torch_walls):.2f}x (median) wall clock; CPU "
        f"{min(grade_cpus) / min(torch_cpus):.2f}x (min), "
        f"{statistics.median(grade_cpus) / statistics.median(torch_cpus):.2f}x (median); "
        f"{args.runs} runs each, alternated; load average (1 min) during the runs "
        f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
