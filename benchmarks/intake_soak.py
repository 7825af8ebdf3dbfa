"""Soak and worst case for the trusted side of intake: random hostile submission trees, and the
heaviest file-based inputs within every cap, graded by the real `grade` command.

    python benchmarks/intake_soak.py [--examples 40] [--seed N] [--worst] [--copies 3] [--keep DIR]

--examples N runs the property of tests/test_intake_property.py on N random trees (each one
`grade` run with an honest control student: exit 0, a results.json per student, the control
bit-identical to a clean run, nothing written outside the output folder, bounded peak memory) and
prints each run's peak RSS. --worst grades a class of the heaviest inputs a file can be within
the caps (a 2 GiB sparse module, a 1 GiB sparse notebook, modules and notebook code at 512 KB,
notebooks at 8 MB with just under 300,000 JSON values, a submission at its 24 MB budget,
parser bombs filling the scan budget, 8 MB of nested brackets), --copies times each, and prints
the trusted process's peak RSS against a clean run's. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import MODULES, solutions_as_submission
from tests.test_intake_property import check_tree, grade_in_subprocess, students

MB = 1024**2


def clean_run(base: Path) -> dict:
    solutions_as_submission(base / "class" / "honest")
    started = time.perf_counter()
    run = grade_in_subprocess(base / "class", base / "out", base / "rss")
    if run.returncode:
        sys.exit(run.stderr)
    return {
        "out": base / "out",
        "results": (base / "out" / "honest" / "results.json").read_bytes(),
        "rss": int((base / "rss").read_text()),
        "seconds": time.perf_counter() - started,
    }


def notebook(cells: list[dict], padding: int = 0) -> str:
    return json.dumps({"cells": cells, "metadata": {"padding": "a" * padding}, "nbformat": 4, "nbformat_minor": 5})


def code(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}


def worst_class(klass: Path, copies: int) -> None:
    solutions_as_submission(klass / "honest")
    short_lines = "x = 1\n" * (510 * 1024 // 6)  # ~510 KB of the shortest lines: most lines per byte
    for copy in range(copies):
        folder = klass / f"sparse-{copy}"
        folder.mkdir(parents=True)
        with open(folder / f"{MODULES[0]}.py", "wb") as handle:
            handle.truncate(2 * 1024**3)
        with open(folder / f"{MODULES[1]}.ipynb", "wb") as handle:
            handle.truncate(1024**3)
        folder = klass / f"max-py-{copy}"
        folder.mkdir()
        for module in MODULES:
            (folder / f"{module}.py").write_text(short_lines)
        folder = klass / f"max-notebook-code-{copy}"
        folder.mkdir()
        cells = [code(f"# module: {module}\n" + short_lines) for module in MODULES]
        (folder / "chapter.ipynb").write_text(notebook(cells, padding=8 * MB - 7 * 520 * 1024))
        folder = klass / f"containers-{copy}"
        folder.mkdir()
        text = '{"cells": [], "x": [' + "[]," * 149_000 + '[]], "pad": "' + "a" * (7 * MB) + '"}'
        (folder / "chapter.ipynb").write_text(text)  # just under 300,000 values
        folder = klass / f"strings-{copy}"
        folder.mkdir()
        text = '{"cells": [], "x": [' + '"ab",' * 299_000 + '""], "pad": "' + "a" * (6 * MB) + '"}'
        (folder / "chapter.ipynb").write_text(text)
        folder = klass / f"budget-{copy}"
        folder.mkdir()
        for index in range(4):
            (folder / f"out{index}.ipynb").write_text(notebook([], padding=8 * MB - 200))
        for index in range(16):
            (folder / f"small{index}.ipynb").write_text(notebook([code("x = 1")]))
        folder = klass / f"parser-bombs-{copy}"
        folder.mkdir()
        cells = [code("1" + "+1" * 16_000) for _ in range(4)] + [code("(" * 190 + ")" * 190)]
        (folder / "chapter.ipynb").write_text(notebook(cells + [code(f"# module: {MODULES[0]}\nX = 1")]))
        folder = klass / f"brackets-{copy}"
        folder.mkdir()
        (folder / "chapter.ipynb").write_text("[" * (8 * MB - 16))


def worst(copies: int, keep: Path | None) -> None:
    base = Path(keep or tempfile.mkdtemp(prefix="intake-worst-"))
    base.mkdir(parents=True, exist_ok=True)
    clean = clean_run(base / "clean")
    worst_class(base / "worst" / "class", copies)
    started = time.perf_counter()
    run = grade_in_subprocess(base / "worst" / "class", base / "worst" / "out", base / "worst" / "rss")
    seconds = time.perf_counter() - started
    if run.returncode:
        sys.exit(run.stderr)
    rss = int((base / "worst" / "rss").read_text())
    students = sum(1 for _ in (base / "worst" / "out").glob("*/results.json"))
    print(f"clean run (1 student): peak RSS of the trusted process {clean['rss']} MB, {clean['seconds']:.1f} s")
    print(
        f"worst file-based inputs ({students} students, {copies} of each): peak RSS {rss} MB "
        f"(+{rss - clean['rss']} MB), {seconds:.1f} s"
    )
    if keep is None:
        shutil.rmtree(base, ignore_errors=True)


def soak(examples: int, keep: Path | None, seed: int | None) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    base = Path(keep or tempfile.mkdtemp(prefix="intake-soak-"))
    base.mkdir(parents=True, exist_ok=True)
    clean = clean_run(base / "clean")
    peaks: list[int] = []

    # No shrinking: one example is one `grade` run (shrinking a failure would take hours); the
    # failing tree is printed as it was generated, and --seed replays the same sequence.
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.explicit, Phase.generate],
    )
    @given(tree=students)
    def run(tree):
        started = time.perf_counter()
        try:
            peaks.append(check_tree(tree, base / "tree", clean))
        except BaseException:
            print(f"  FAILED on the tree {tree!r} (kept in {base / 'tree'})", flush=True)
            raise
        print(
            f"  tree of {len(tree)} students: peak RSS {peaks[-1]} MB, {time.perf_counter() - started:.1f} s",
            flush=True,
        )

    (seeded(seed)(run) if seed is not None else run)()
    print(
        f"{len(peaks)} random trees: every invariant held; peak RSS max {max(peaks)} MB (clean run {clean['rss']} MB)"
    )
    if keep is None:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=40, help="random trees to grade (default 40)")
    parser.add_argument("--worst", action="store_true", help="grade the heaviest file-based inputs instead")
    parser.add_argument("--copies", type=int, default=3, help="copies of each worst input (default 3)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--seed", type=int, help="replay the random trees of this hypothesis seed")
    args = parser.parse_args()
    if args.worst:
        worst(args.copies, args.keep)
    else:
        soak(args.examples, args.keep, args.seed)


if __name__ == "__main__":
    main()
