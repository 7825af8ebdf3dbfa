"""Throughput: what grading a class costs, per submission, against one fresh interpreter per submission.

    python benchmarks/throughput.py [--copies 1000] [--marginal 300] [--repeat 2] [--baseline-samples 8]
                                    [--jobs N] [--keep DIR] [--uncached-drawings] [--skip-class]

Every class is built from the realistic corpus (benchmarks/corpus.py: correct alternatives,
hand-written bugs, AST mutants of the reference, broken files), each copy unique. Each grading run
is `python -m grader CLASS --out OUT --quiet --force --jobs N` with a fresh output folder, and its
CPU time is that of the whole process tree (a cgroup v2 of its own where one can be made, else
/proc: benchmarks/cpu.py), split into the trusted process and the sandbox (everything it started).
Printed, in one run:

1. marginal CPU per added submission (a class of MARGINAL + B against one of B, B the smallest
   class that starts N workers: 33 for 2; min and median of REPEAT runs each), for correct, buggy
   (traced) and mixed code, split sandbox / trusted;
2. the floors (benchmarks/floors.py, in a process warmed up as a worker is): the probes run in
   process, a bare fork + _exit, fork + probes + _exit;
3. a class of COPIES mixed submissions: wall-clock time and CPU per submission, against the
   baseline of one fresh `python -m pytest grader/suites/hidden -p baseline_plugin --submission
   DIR` per submission (benchmarks/baseline_plugin.py; student code imported in-process) on a
   sample, as many at a time as the grader has jobs: the ratio of their rates (wall clock) and of
   their CPU per submission.

Wall-clock numbers depend on what else runs on the machine (the load average is printed with
them); CPU numbers much less. --uncached-drawings draws every heatmap anew (the reports otherwise
draw each distinct grid once per run). Not part of the test run; the sandbox alone:
benchmarks/sandbox.py; one submission from cold: benchmarks/cold.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import build_class, templates
from cpu import Usage, measured

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.frameworks import PYTORCH
from grader.run.plan import SUBMISSIONS_PER_WORKER

UNCACHED_DRAWINGS = """
import sys
import grader.report.heatmaps as heatmaps
import grader.report.render as render
render._attention_grid = render._attention_grid.__wrapped__
heatmaps._grid_of_rows = heatmaps._grid_of_rows.__wrapped__
from grader.cli import main
sys.exit(main())
"""


def run_grader(cls: Path, out: Path, jobs: int, uncached_drawings: bool = False) -> Usage:
    """Grade CLS into a fresh OUT; what it cost."""
    shutil.rmtree(out, ignore_errors=True)
    command = ["-c", UNCACHED_DRAWINGS] if uncached_drawings else ["-m", "grader"]
    usage = measured(
        [sys.executable, *command, str(cls), "--out", str(out), "--quiet", "--force", "--jobs", str(jobs)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    if usage.returncode != 0:
        raise SystemExit(f"grading {cls} failed with status {usage.returncode}")
    return usage


def baseline_command(student: Path) -> list[str]:
    return [
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
    ]


def run_baseline(students: list[Path], jobs: int) -> tuple[float, float]:
    """One fresh interpreter per submission, JOBS at a time: (wall seconds, CPU seconds in all)."""
    environment = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONPATH=str(ROOT / "benchmarks"))

    def one(student: Path) -> Usage:
        return measured(
            baseline_command(student), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as executor:
        usages = list(executor.map(one, students))
    return time.perf_counter() - started, sum(u.cpu for u in usages)


def base_size(jobs: int) -> int:
    """The smallest class that starts JOBS workers on any machine (grader.run.plan.Plan.workers): the
    two classes of a marginal measurement must start as many, or the difference counts a worker's start."""
    return max(2, SUBMISSIONS_PER_WORKER[PYTORCH] * (jobs - 1) + 1)


def marginal(work: Path, kind: str, sources: list[Path], count: int, jobs: int, repeat: int) -> dict[str, list[float]]:
    """Milliseconds of CPU per added submission of KIND (COUNT + base_size against base_size), REPEAT
    times: {"all": [...], "sandbox": [...], "trusted": [...]}."""
    small = build_class(work / f"{kind}-small", base_size(jobs), sources)
    large = build_class(work / f"{kind}-large", count + base_size(jobs), sources)
    found: dict[str, list[float]] = {"all": [], "sandbox": [], "trusted": []}
    for _ in range(repeat):
        few = run_grader(work / f"{kind}-small", work / "out-small", jobs)
        many = run_grader(work / f"{kind}-large", work / "out-large", jobs)
        added = len(large) - len(small)
        found["all"].append(1000 * (many.cpu - few.cpu) / added)
        found["sandbox"].append(1000 * (many.descendants - few.descendants) / added)
        found["trusted"].append(1000 * (many.own - few.own) / added)
    return found


def floors(students: list[Path]) -> dict[str, float]:
    """benchmarks/floors.py in the workers' environment."""
    from grader.sandbox.connection import environment

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "floors.py"), *map(str, students)],
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"min {min(values):.1f}, median {statistics.median(values):.1f}"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--marginal", type=int, default=300, help="submissions added for the marginal CPU (0: skip)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline-samples", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", type=Path, help="build the classes and reports here and keep them")
    parser.add_argument("--kinds", default="correct,buggy,mixed", help="kinds for the marginal CPU")
    parser.add_argument("--skip-class", action="store_true", help="no class of COPIES, no baseline")
    parser.add_argument("--uncached-drawings", action="store_true", help="draw every heatmap anew: the worst case")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="throughput-"))
    kinds = templates(work)
    print(f"{os.cpu_count()} cores, {args.jobs} jobs; corpus: " + ", ".join(f"{len(v)} {k}" for k, v in kinds.items()))
    if args.marginal:
        for kind in args.kinds.split(","):
            found = marginal(work, kind, kinds[kind], args.marginal, args.jobs, args.repeat)
            print(
                f"marginal CPU per {kind} submission ({args.marginal} + {base_size(args.jobs)} vs "
                f"{base_size(args.jobs)}, {args.repeat} runs): "
                f"{spread(found['all'])} ms; sandbox {spread(found['sandbox'])}, trusted {spread(found['trusted'])}"
            )
    floor = floors(kinds["correct"][:20])
    print(
        "floors per correct submission, in a warm worker: probes in process {in_process_ms:.1f} ms; "
        "bare fork + _exit {bare_fork_ms:.1f} ms; fork + probes + _exit {fork_probes_ms:.1f} ms".format(**floor)
    )
    if not args.skip_class:
        students = build_class(work / "class", args.copies, kinds["mixed"])
        usage = run_grader(work / "class", work / "reports", args.jobs, args.uncached_drawings)
        n = len(students)
        print(
            f"grader:   {n} mixed submissions in {usage.wall:.1f} s = {n / usage.wall:.2f} submissions/s; CPU "
            f"{1000 * usage.cpu / n:.1f} ms per submission (sandbox {1000 * usage.descendants / n:.1f}, trusted "
            f"{1000 * usage.own / n:.1f}; {usage.source}; {load()})"
            + (" (every heatmap drawn anew)" if args.uncached_drawings else "")
        )
        sample = students[: args.baseline_samples]
        seconds, cpu = run_baseline(sample, args.jobs)
        print(
            f"baseline: {len(sample)} submissions in {seconds:.1f} s = {len(sample) / seconds:.2f} submissions/s; "
            f"CPU {1000 * cpu / len(sample):.0f} ms per submission (one fresh pytest process each; {load()})"
        )
        print(
            f"ratio at {n}: {(n / usage.wall) / (len(sample) / seconds):.1f}x (wall clock), "
            f"{(cpu / len(sample)) / (usage.cpu / n):.1f}x (CPU per submission)"
        )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
