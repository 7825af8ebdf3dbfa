"""How well the diagnosis names and locates mistakes in whole chapter notebooks written by others.

    python benchmarks/notebook_diagnosis.py CORPUS [--reports DIR] [--verbose]

CORPUS is a folder of student folders, each holding one chapter-3 notebook as its author wrote it
(no `# module:` lines) and a `labels.json` written by reading the notebook before running the kit:

    {"notebook": "ch03.ipynb",
     "absent": ["sec3_5_causal_attention", ...],        # modules with no code at all
     "misspelt": [{"module": ..., "wanted": "CausalAttention", "found": "CauslaAttention"}],
     "defects": [{"module": ..., "cell": 34, "lines": [27, 28],   # code cell, lines in the cell
                  "causes": ["mask-not-applied"],                  # the catalogue's causes that fit
                  "what": "masked_fill's result discarded"}]}

The corpus is kept outside the repository (public notebooks are their authors' code). The kit
grades the corpus (`grade CORPUS --out DIR`; or reads the reports already in --reports), then
this prints, over the failing checks of deficient notebook code (a module with a labelled defect,
or a check blocked by one; not a check of a function or module the notebook does not have):
- the share that point at a labelled cell and line (the diagnosis's line, or a line the message
  names: "code cell 34, line 27");
- failures that blame a module the notebook does not have ("needs your X, which is broken");
- causes named that fit none of the labelled defects of that module;
- misspellings not named in a check they break (a check of the misspelt name's module that fails
  for want of it);
- the kit's CPU time for the corpus.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]
PLACE = re.compile(r"code cell (\d+), line (\d+)")
NOT_THERE = ("does not define", "No code for", "does not have", "no code found")


@dataclass
class Tally:
    deficient: int = 0
    located: int = 0
    absent_blamed: list[str] = field(default_factory=list)
    unfit_causes: list[str] = field(default_factory=list)
    misspellings_unnamed: list[str] = field(default_factory=list)
    misspelt_checks: int = 0
    unlocated: list[str] = field(default_factory=list)


def grade(corpus: Path, out: Path) -> float:
    """Grades the corpus; the CPU seconds the kit (and its sandboxed children) used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "grader", str(corpus), "--out", str(out), "--force", "--quiet", "--jobs", "1"],
        cwd=ROOT,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def places(test: dict) -> set[tuple[int, int]]:
    found = {(int(c), int(line)) for c, line in PLACE.findall(test.get("message") or "")}
    diagnosis = test.get("diagnosis") or {}
    if diagnosis.get("cell") and diagnosis.get("line"):
        found.add((int(diagnosis["cell"]), int(diagnosis["line"])))
    return found


def judge(student: str, labels: dict, results: dict, tally: Tally) -> None:
    defects = labels.get("defects", [])
    absent = set(labels.get("absent", []))
    defective = {d["module"] for d in defects}
    for test in results["tests"]:
        if test["status"] == "passed":
            continue
        module = test["id"].split("::")[0]
        message = test.get("message") or ""
        where = f"{student} {test['id']}"
        blocked = test.get("blocked_by")
        if blocked in absent or ("which is broken" in message and any(m in message for m in absent)):
            tally.absent_blamed.append(f"{where}: {message[:160]}")
        named = (test.get("diagnosis") or {}).get("misconceptions") or []
        fitting = {c for d in defects if d["module"] in (module, blocked) for c in d["causes"]}
        tally.unfit_causes += [f"{where}: {c}" for c in named if c not in fitting]
        for miss in labels.get("misspelt", []):
            if miss["module"] == module and any(n in message for n in NOT_THERE):
                tally.misspelt_checks += 1
                if miss["found"] not in message:
                    tally.misspellings_unnamed.append(f"{where}: {miss['found']}")
        if module in absent or any(n in message for n in NOT_THERE):
            continue  # not deficient code: code the notebook does not have
        sites = {(d["cell"], line) for d in defects if d["module"] in (module, blocked) for line in d["lines"]}
        if module not in defective and blocked not in defective:
            continue
        tally.deficient += 1
        if places(test) & sites:
            tally.located += 1
        else:
            tally.unlocated.append(f"{where}: {sorted(places(test))} {message[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--reports", type=Path, help="reports already made for the corpus (no grading)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    students = sorted(p.parent for p in args.corpus.glob("*/labels.json"))
    with tempfile.TemporaryDirectory() as scratch:
        reports = args.reports
        seconds = None
        if reports is None:
            reports = Path(scratch) / "reports"
            seconds = grade(args.corpus, reports)
        tally = Tally()
        for folder in students:
            labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
            results = json.loads((reports / folder.name / "results.json").read_text(encoding="utf-8"))
            judge(folder.name, labels, results, tally)
    share = tally.located / tally.deficient if tally.deficient else 1.0
    print(f"notebooks: {len(students)}")
    located = f"{tally.located}/{tally.deficient} ({share:.0%})"
    print(f"failing checks of deficient code at a labelled cell and line: {located}")
    print(f"failures blamed on a module the notebook does not have: {len(tally.absent_blamed)}")
    print(f"causes named that fit no labelled defect: {len(tally.unfit_causes)}")
    unnamed = len(tally.misspellings_unnamed)
    print(f"checks broken by a misspelling that do not name it: {unnamed}/{tally.misspelt_checks}")
    if seconds is not None:
        print(f"CPU time of grading the corpus: {seconds:.1f} s")
    if args.verbose:
        for title, lines in [
            ("not located", tally.unlocated),
            ("blamed on an absent module", tally.absent_blamed),
            ("causes that fit no defect", tally.unfit_causes),
            ("misspellings not named", tally.misspellings_unnamed),
        ]:
            print(f"\n{title}:")
            for line in lines:
                print("  " + line)


if __name__ == "__main__":
    main()
