"""How well check.py (the students' self-check) catches and explains mistakes: the mutants of the
reference (benchmarks/mutation.py: one AST change each) run through the public checks of a fresh
bundle, all in this process (the mutants are our own code).

    python benchmarks/check_mutants.py [--limit N] [--seed S] [--verbose]

The hidden suites are the oracle: a mutant that loses points changes what a function or class of
the exercise computes on the grader's inputs. Prints, of the mutants that lose points:
- the share the public checks catch (some check does not pass);
- of the caught ones with a catalogued mistake, the share whose cause check.py names, and the
  share it names wrongly; of the uncatalogued ones, how many get a cause anyway;
- the share of named departures that point at the mutated line;
- every mutant that loses points and passes every public check (silent), with the hidden tests
  it fails, so that each can be judged: does it change a public function's output on realistic
  inputs, or only something no public check looks at (gradients, dtypes, parameters)?
and the mutants that lose nothing yet fail a public check (false alarms: there must be none).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutation import MODULES, Mutant, single_mutants, solution_sources


@dataclass
class Checked:
    mutant: Mutant
    loses: bool  # loses points in the hidden suites
    hidden_failures: list[str]
    failing: list[dict]  # the public checks that did not pass (their rows)

    @property
    def caught(self) -> bool:
        return bool(self.failing)

    @property
    def causes(self) -> set[str]:
        return {row["cause_id"] for row in self.failing if row.get("cause_id")}

    @property
    def located(self) -> bool | None:
        """Whether a named departure points at the mutated line (None when none is named)."""
        places = [row["place"] for row in self.failing if row.get("place")]
        if not places:
            return None
        return any(Path(f).name == f"{self.mutant.module}.py" and line in self.mutant.lines for f, line, _ in places)


def load_checker(bundle: Path):
    from grader.classroom.release import write_release

    write_release(bundle, force=True)
    sys.path.insert(0, str(bundle))
    spec = importlib.util.spec_from_file_location("bundle_check", bundle / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from ch3_checks import Messages

    return module, Messages("en")


def run(mutants: list[Mutant], work: Path) -> list[Checked]:
    from in_process import InProcess

    checker, t = load_checker(work / "bundle")
    grading = InProcess()
    original = solution_sources()
    checked = []
    for index, mutant in enumerate(mutants):
        folder = work / f"m{index:03d}"
        folder.mkdir()
        for module in MODULES:
            (folder / f"{module}.py").write_text(mutant.source if module == mutant.module else original[module])
        outcomes = grading.graded(folder).outcomes
        results, _ = checker.check_folder(folder, t)
        checked.append(
            Checked(
                mutant,
                any(o.points < o.max_points for o in outcomes),
                [o.id for o in outcomes if o.points < o.max_points],
                [r for r in results if r["status"] != "pass"],
            )
        )
    return checked


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.1f} %" if whole else "0/0"


def report(checked: list[Checked], verbose: bool) -> None:
    losing = [c for c in checked if c.loses]
    caught = [c for c in losing if c.caught]
    print(f"single mutants: {len(checked)}, of which lose points in the hidden suites: {len(losing)}")
    print(f"caught by the public checks: {percent(len(caught), len(losing))}")
    catalogued = [c for c in caught if c.mutant.label]
    named = [c for c in catalogued if c.mutant.label in c.causes]
    wrong = [c for c in catalogued if c.causes and c.mutant.label not in c.causes]
    print(
        f"caught with a catalogued mistake: {len(catalogued)}; named with their cause: "
        f"{percent(len(named), len(catalogued))}; another cause named: {percent(len(wrong), len(catalogued))}"
    )
    all_catalogued = [c for c in losing if c.mutant.label]
    share = percent(len(named), len(all_catalogued))
    print(f"catalogued mutants named with their cause (of all that lose points): {share}")
    by_label = Counter(c.mutant.label for c in catalogued)
    for label, count in sorted(by_label.items()):
        hits = sum(c.mutant.label == label and label in c.causes for c in catalogued)
        print(f"  {label:34s} {hits:3d} / {count:3d}")
    uncatalogued = [c for c in caught if not c.mutant.label]
    given = [c for c in uncatalogued if c.causes]
    print(
        f"caught without a catalogued mistake: {len(uncatalogued)}; given a cause anyway: {len(given)} "
        f"({Counter(n for c in given for n in c.causes).most_common(6)})"
    )
    with_place = [c for c in caught if c.located is not None]
    print(
        f"a departure named (file, line): {percent(len(with_place), len(caught))}; "
        f"at the mutated line: {percent(sum(bool(c.located) for c in with_place), len(with_place))}"
    )
    silent = [c for c in losing if not c.caught]
    print(f"silent (lose points, pass every public check): {len(silent)}")
    for c in silent:
        print(f"  {c.mutant.detail} [{c.mutant.label}]: fails {', '.join(t.split('::')[1] for t in c.hidden_failures)}")
    false = [c for c in checked if not c.loses and c.caught]
    print(f"false alarms (lose nothing, fail a public check): {len(false)}")
    for c in false:
        print(f"  {c.mutant.detail}: {[r['key'] for r in c.failing]}")
    if verbose:
        print("\n-- catalogued mutants caught but not named")
        for c in catalogued:
            if c.mutant.label not in c.causes:
                keys = [r["key"] for r in c.failing][:4]
                print(f"  {c.mutant.detail} [{c.mutant.label}]: named {sorted(c.causes)}; {keys}")
        print("\n-- uncatalogued mutants given a cause")
        for c in given:
            print(f"  {c.mutant.detail}: named {sorted(c.causes)}")
        print("\n-- departures not at the mutated line")
        for c in with_place:
            if not c.located:
                places = sorted({(Path(r["place"][0]).name, r["place"][1]) for r in c.failing if r.get("place")})
                print(f"  {c.mutant.detail} (lines {sorted(c.mutant.lines)}): {places}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="a sample of this many mutants")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    mutants = single_mutants()
    if args.limit:
        mutants = random.Random(args.seed).sample(mutants, min(args.limit, len(mutants)))
    work = Path(tempfile.mkdtemp(prefix="check-mutants-"))
    try:
        checked = run(mutants, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(checked, args.verbose)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
