"""Sandbox alone: warm workers grading N submissions (probes only, no pytest, no reports).

    python benchmarks/sandbox.py [--copies 300] [--jobs N]

Prints submissions per second and the CPU time the sandbox spent per submission (the workers
and their forked children, counted once the pool has stopped and reaped them). Not part of the
test run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus import build_class, templates
from cpu import machine_cpu, tree_cpu

from grader.intake.discovery import read_submission
from grader.probes import load_all
from grader.records import ProbeError
from grader.sandbox.pool import SandboxPool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    mixed = templates(work)["mixed"]
    submissions = [read_submission(p) for p in build_class(work / "class", args.copies, mixed)]
    probes = sorted(load_all())
    errors = 0
    with SandboxPool(args.jobs, probes=probes) as pool:
        warm = [read_submission(p) for p in build_class(work / "warm", args.jobs, mixed)]
        for submission in warm:  # start every worker before timing
            pool.submit(submission)
        list(pool.results())
        before = tree_cpu(os.getpid())
        own_before, machine_before = time.process_time(), machine_cpu()
        started = time.perf_counter()
        for submission in submissions:
            pool.submit(submission)
        for run in pool.results():
            errors += sum(
                isinstance(r, ProbeError) and r.kind not in ("exception", "contract", "import")
                for r in run.results.values()
            )
        seconds = time.perf_counter() - started
        cpu = tree_cpu(os.getpid()) - before
        own = time.process_time() - own_before
        machine = machine_cpu() - machine_before
    shutil.rmtree(work, ignore_errors=True)
    n = len(submissions)
    print(
        f"sandbox: {n} submissions, {args.jobs} jobs, {len(probes)} probes: {seconds:.1f} s = "
        f"{n / seconds:.2f} submissions/s; CPU {1000 * cpu / n:.0f} ms per submission "
        f"in the workers and their children, {1000 * own / n:.0f} ms in this process (decoding); "
        f"the whole machine was busy {1000 * machine / n:.0f} ms per submission; sandbox failures {errors}"
    )


if __name__ == "__main__":
    main()
