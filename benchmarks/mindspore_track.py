"""Throughput of the MindSpore track: a class of N MindSpore submissions graded with full isolation
against one fresh interpreter per submission, measured in the same run.

    python benchmarks/mindspore_track.py [--copies 200] [--baseline-samples 8] [--jobs N] [--keep DIR]

The class cycles through examples/mindspore-class/ (students with typical mistakes and a port-style
submission) and the MindSpore reference, each copy made unique with a comment. The grader is
`python -m grader CLASS --out OUT --quiet --force` (sandboxed MindSpore workers, fresh output
folder); the baseline is one fresh `python -m pytest grader/suites/hidden -p baseline_plugin
--submission DIR` per submission (it imports torch and MindSpore and the student's code), on a
sample, as many at a time as the grader has jobs. Prints submissions per second for both, their
ratio, and whether every copy of the reference earned full marks (the numbers mean nothing
otherwise). Not part of the test run; the PyTorch track's numbers: benchmarks/throughput.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import build_class
from throughput import ROOT, run_baseline, run_grader


def templates(work: Path) -> list[Path]:
    examples = sorted(p for p in (ROOT / "examples" / "mindspore-class").iterdir() if p.is_dir())
    reference = work / "templates" / "ms-reference"
    reference.mkdir(parents=True, exist_ok=True)
    for path in (ROOT / "solutions" / "mindspore").glob("*.py"):
        if path.name != "__init__.py":
            source = re.sub(r"^from \.(\w+) import", r"from \1 import", path.read_text(), flags=re.M)
            (reference / path.name).write_text(source)
    return [reference, *examples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=200)
    parser.add_argument("--baseline-samples", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", type=Path, help="build the class and reports here and keep them")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="mindspore-throughput-"))
    for name in ("class", "reports", "templates"):
        shutil.rmtree(work / name, ignore_errors=True)
    sources = templates(work)
    students = build_class(work / "class", args.copies, sources)
    print(
        f"{len(students)} MindSpore submissions from {len(sources)} templates, {args.jobs} jobs, {os.cpu_count()} cores"
    )
    usage = run_grader(work / "class", work / "reports", args.jobs)
    n = len(students)
    seconds, rate = usage.wall, n / usage.wall
    print(
        f"grader:   {n} submissions in {seconds:.1f} s = {rate:.2f} submissions/s; CPU "
        f"{1000 * usage.cpu / n:.0f} ms per submission (sandbox {1000 * usage.descendants / n:.0f}, "
        f"trusted {1000 * usage.own / n:.0f}; {usage.source}; load average {os.getloadavg()[0]:.2f})"
    )
    documents = [json.loads((work / "reports" / s.name / "results.json").read_text()) for s in students]
    reference = [d for d in documents if d["submission"].startswith("ms-reference-")]
    full = all(d["score"] == d["max_score"] and d.get("track") == "mindspore" for d in reference)
    print(
        f"check:    {len(reference)} copies of the reference "
        + ("all earned full marks on the MindSpore track" if full else "did NOT all earn full marks")
    )
    sample = students[: args.baseline_samples]
    baseline_seconds, baseline_cpu = run_baseline(sample, args.jobs)
    baseline_rate = len(sample) / baseline_seconds
    print(
        f"baseline: {len(sample)} submissions in {baseline_seconds:.1f} s = {baseline_rate:.2f} submissions/s; "
        f"CPU {1000 * baseline_cpu / len(sample):.0f} ms per submission "
        f"(one fresh interpreter each: torch, MindSpore and the student's code imported)"
    )
    print(f"speed-up: {rate / baseline_rate:.1f}x")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
