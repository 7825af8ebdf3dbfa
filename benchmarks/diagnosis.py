"""How well the diagnosis names and locates mistakes it was not written for.

    python benchmarks/diagnosis.py [--pairs 120] [--seed 10] [--verbose] [--only OPERATOR]

A corpus of mutants of the reference solutions (benchmarks/mutation.py: AST operators that change a
dim, a diagonal, a divisor or exponent, drop or reorder a statement, discard a call's result, swap
arguments or attributes, leave a transpose out, change an initialisation, a constant or a mask
slice), pairs of two independent mutants, and hand-written buggy submissions in other code shapes
(tests/submissions/shapes/), each graded with the hidden suites and diagnosed with traces of what
failed; student code runs in this process (the mutants are our own code). Labels come from the
operator and the place of the mutation (or the folder name of a hand-written one), never from the
grader's answer. Prints:
- mutants that lose points;
- of those with a catalogued cause, the share named correctly (their cause named, nothing else);
- the share of value failures (failed tests of the mutated module) located to the mutated line;
- two-mistake mutants with both causes named;
- false diagnoses on correct code (the correct alternatives and every mutant that loses nothing).
Not part of the test run; tests/test_diagnosis_recogniser.py runs a sample of it.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutation import MODULES, Mutant, combine, single_mutants, solution_sources

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ROOT / "tests" / "submissions" / "shapes"  # <cause>/<shape>/: one catalogued mistake
STACKED = ROOT / "tests" / "submissions" / "stacked"  # <cause>+<cause>/<shape>/: two on one path
UNNAMED = ROOT / "tests" / "submissions" / "unnamed"  # <mistake>/<shape>/: one the catalogue has no name for
CORRECT = ROOT / "tests" / "submissions" / "correct"


@dataclass
class Case:
    name: str
    kind: str  # "single", "pair", "shape", "correct"
    sources: dict[str, str]  # module -> source (the reference's for the others)
    labels: list[str | None]
    lines: dict[str, frozenset[int]] = field(default_factory=dict)  # module -> where the mistakes are
    detail: str = ""


@dataclass
class Graded:
    case: Case
    score: float
    max_score: float
    outcomes: list

    @property
    def loses_points(self) -> bool:
        return self.score < self.max_score

    @property
    def named(self) -> list[str]:
        found: list[str] = []
        for outcome in self.outcomes:
            if outcome.diagnosis is not None:
                found += list(outcome.diagnosis.misconceptions)
            elif outcome.misconception:
                found.append(outcome.misconception)
        return list(dict.fromkeys(found))


def single_cases(mutants: list[Mutant]) -> list[Case]:
    return [
        Case(f"m{index:03d}", "single", {m.module: m.source}, [m.label], {m.module: m.lines}, m.detail)
        for index, m in enumerate(mutants)
    ]


def pair_cases(
    graded: list[Graded], mutants: dict[str, Mutant], count: int, seed: int, stacked: bool = False
) -> list[Case]:
    """Two catalogued mutants that each lose points with value failures only (no error), with
    different causes, on lines that do not touch; `stacked`: both in one function (on one path:
    a mask left out and the softmax too), drawn from every such pair."""
    original = solution_sources()
    usable = [
        g.case
        for g in graded
        if g.case.kind == "single"
        and g.case.labels[0]
        and g.loses_points
        and not any(o.status == "error" for o in g.outcomes)
        and any(o.status == "failed" for o in g.outcomes)
    ]
    rng = random.Random(seed)
    if stacked:
        together = [
            (a, b)
            for i, a in enumerate(usable)
            for b in usable[i + 1 :]
            if (mutants[a.name].module, mutants[a.name].function) == (mutants[b.name].module, mutants[b.name].function)
            and a.labels[0] != b.labels[0]
        ]
        candidates = iter(rng.sample(together, len(together)))
    else:
        candidates = (tuple(rng.sample(usable, 2)) for _ in range(20 * count))
    cases, tried = [], set()
    for a, b in candidates:
        if len(cases) >= count:
            break
        key = tuple(sorted((a.name, b.name)))
        if key in tried or a.labels[0] == b.labels[0]:
            continue
        tried.add(key)
        sources = combine(mutants[a.name], mutants[b.name], original)
        if sources is None:
            continue
        lines: dict[str, frozenset[int]] = defaultdict(frozenset)
        for case in (a, b):
            for module, where in case.lines.items():
                lines[module] |= where
        name, kind = f"{a.name}+{b.name}", "stacked" if stacked else "pair"
        cases.append(Case(name, kind, sources, [a.labels[0], b.labels[0]], dict(lines), f"{a.detail} + {b.detail}"))
    return cases


def shape_cases() -> list[Case]:
    """Hand-written submissions, their mistakes' lines marked `# <- the mistake`:
    tests/submissions/shapes/<misconception>/<shape>/ (one mistake each), stacked/<a>+<b>/<shape>/
    (two mistakes on one path), unnamed/<mistake>/<shape>/ (one the catalogue has no name for)."""
    cases = []
    for root, kind in ((SHAPES, "shape"), (STACKED, "stacked-shape"), (UNNAMED, "shape")):
        for folder in sorted(root.glob("*/*")) if root.is_dir() else []:
            sources = {p.stem: p.read_text() for p in folder.glob("*.py")}
            lines = {}
            for module, text in sources.items():
                marked = frozenset(i for i, line in enumerate(text.splitlines(), 1) if "# <- the mistake" in line)
                if marked:
                    lines[module] = marked
            labels = [None] if root == UNNAMED else folder.parent.name.split("+")
            name = (
                f"{root.name}/{folder.parent.name}/{folder.name}"
                if root != SHAPES
                else f"{folder.parent.name}/{folder.name}"
            )
            cases.append(Case(name, kind, sources, labels, lines))
    return cases


def correct_cases() -> list[Case]:
    cases = [Case("solutions", "correct", {}, [])]
    for folder in sorted(p for p in CORRECT.iterdir() if p.is_dir()):
        cases.append(
            Case(f"correct/{folder.name}", "correct", {p.stem: p.read_text() for p in folder.glob("*.py")}, [])
        )
    return cases


def grade(cases: list[Case], work: Path) -> list[Graded]:
    from in_process import grade_in_process

    original = solution_sources()
    directories, by_directory = [], {}
    for index, case in enumerate(cases):
        directory = work / f"case{index:04d}"
        directory.mkdir(parents=True)
        for module in MODULES:
            (directory / f"{module}.py").write_text(case.sources.get(module, original[module]))
        directories.append(directory)
        by_directory[directory] = case
    graded: list[Graded] = []

    def sink(directory, seam, outcomes) -> None:
        score = sum(o.points for o in outcomes)
        graded.append(Graded(by_directory[directory], score, sum(o.max_points for o in outcomes), outcomes))

    grade_in_process(directories, sink)
    return graded


def located(graded: Graded) -> tuple[int, int, list[str]]:
    """Value failures of the mutated modules, and how many point at a line where a mistake is."""
    total, right, misses = 0, 0, []
    for outcome in graded.outcomes:
        lines = graded.case.lines.get(outcome.module)
        if outcome.status != "failed" or lines is None:
            continue
        total += 1
        where = outcome.diagnosis.location if outcome.diagnosis else None
        if where is not None and where.file == f"{outcome.module}.py" and where.line in lines:
            right += 1
        else:
            misses.append(f"{outcome.id}: {where.file + ':' + str(where.line) if where else 'no line'}")
    return total, right, misses


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.1f} %" if whole else "0/0"


def report(graded: list[Graded], verbose: bool) -> None:
    singles = [g for g in graded if g.case.kind in ("single", "shape")]
    losing = [g for g in singles if g.loses_points]
    mutants = [g for g in singles if g.case.kind == "single"]
    print(
        f"single mutants: {len(mutants)}, of which lose points: {sum(g.loses_points for g in mutants)}; "
        f"hand-written shapes: {sum(g.case.kind == 'shape' for g in graded)}"
    )
    catalogued = [g for g in losing if g.case.labels[0]]
    named = [g for g in catalogued if g.named == [g.case.labels[0]]]
    named_among = [g for g in catalogued if g.case.labels[0] in g.named]
    print(
        f"catalogued and losing points: {len(catalogued)}; named correctly (their cause, nothing else): "
        f"{percent(len(named), len(catalogued))}; "
        f"their cause among the names: {percent(len(named_among), len(catalogued))}"
    )
    by_label: dict[str, list[Graded]] = defaultdict(list)
    for g in catalogued:
        by_label[g.case.labels[0]].append(g)
    for label, group in sorted(by_label.items()):
        hits = sum(g.named == [label] for g in group)
        print(f"  {label:34s} {hits:3d} / {len(group):3d}")
    uncatalogued = [g for g in losing if not g.case.labels[0]]
    wrongly = [g for g in uncatalogued if g.named]
    print(
        f"uncatalogued and losing points: {len(uncatalogued)}; given a name anyway: {len(wrongly)} "
        f"({Counter(n for g in wrongly for n in g.named).most_common(6)})"
    )
    totals = [located(g) for g in losing]
    print(
        "value failures located to the mutated file:line: "
        f"{percent(sum(t[1] for t in totals), sum(t[0] for t in totals))}"
    )
    pairs = [g for g in graded if g.case.kind in ("pair", "stacked", "stacked-shape") and g.loses_points]
    both = [g for g in pairs if all(label in g.named for label in g.case.labels)]
    stacked = [g for g in pairs if g.case.kind in ("stacked", "stacked-shape")]
    print(
        f"two-mistake mutants losing points: {len(pairs)}; both causes named: {percent(len(both), len(pairs))} "
        f"(of them stacked in one function: {percent(sum(g in both for g in stacked), len(stacked))})"
    )
    correct = [g for g in graded if g.case.kind == "correct"]
    equivalent = [g for g in singles if not g.loses_points]
    false = [g for g in correct + equivalent if any(o.diagnosis or o.misconception for o in g.outcomes)]
    print(
        f"correct alternatives at full marks: {sum(not g.loses_points for g in correct)}/{len(correct)}; "
        f"mutants that lose nothing: {len(equivalent)}; false diagnoses on correct code: {len(false)}"
    )
    if verbose:
        print("\n-- catalogued mutants not named correctly")
        for g in catalogued:
            if g.named != [g.case.labels[0]]:
                print(f"  {g.case.name} [{g.case.labels[0]}] {g.case.detail}: named {g.named}")
        print("\n-- value failures not located")
        for g in losing:
            for miss in located(g)[2][:3]:
                print(f"  {g.case.name} {g.case.detail}: {miss}")
        print("\n-- pairs not fully named")
        for g in pairs:
            if g not in both:
                print(f"  {g.case.name} {g.case.labels}: named {g.named} ({g.case.detail})")
        for g in false:
            print(
                f"  FALSE DIAGNOSIS {g.case.name}: {[(o.id, o.misconception) for o in g.outcomes if o.misconception]}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=120, help="two-mistake mutants to build")
    parser.add_argument("--stacked", type=int, default=60, help="of them, two mistakes in one function")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--only", help="only single mutants of this operator (and no pairs)")
    parser.add_argument("--limit", type=int, help="at most this many single mutants (a sample, for a quick look)")
    parser.add_argument("--verbose", action="store_true", help="list what was missed")
    args = parser.parse_args()
    started = time.perf_counter()
    mutants = single_mutants()
    if args.only:
        mutants = [m for m in mutants if m.operator == args.only]
    if args.limit:
        mutants = random.Random(args.seed).sample(mutants, min(args.limit, len(mutants)))
    cases = single_cases(mutants) + shape_cases() + correct_cases()
    work = Path(tempfile.mkdtemp(prefix="diagnosis-benchmark-"))
    try:
        graded = grade(cases, work / "singles")
        if args.pairs and not args.only:
            by_name = {case.name: mutant for case, mutant in zip(cases, mutants)}
            pairs = pair_cases(graded, by_name, args.pairs - args.stacked, args.seed)
            pairs += pair_cases(graded, by_name, args.stacked, args.seed, stacked=True)
            graded += grade(pairs, work / "pairs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(graded, args.verbose)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
