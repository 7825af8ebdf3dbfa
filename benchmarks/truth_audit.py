"""Truth audit of the diagnosis: is every sentence it says about a mutant true of the mutant's change?

    python benchmarks/truth_audit.py [--sample 100] [--cases 160] [--seed 26] [--verbose]

Grades a random sample of the AST mutant corpus (benchmarks/mutation.py: single mutants, two
mistakes apart and two stacked in one function), draws `--sample` diagnoses at random among the
failing checks that say something about a cause (a named cause, a checkpoint, a line, or "this
check uses your X.py, which does not work yet") and checks each sentence of each against what is
known of the mutant without asking the grader: its operator, the lines it changed, the label the
operator gives it, and the reference's checkpoint declarations on those lines. A sentence is:
- a named cause (its title, explanation and hint: three sentences, one verdict): true when the
  mutant's label is that cause, or a cause `also_true` says is behaviourally that mutant's;
- the checkpoint ("First step that differs from the reference: ...", and its hint when shown):
  true when it is a step the changed lines compute (their `[checkpoint: ...]` declarations, the next
  declared step for a line that declares none, the step that uses what a constructor line creates,
  "parameters" for a constructor or an exercise's configuration (and the split into heads for its
  number of heads), "returned" for an extra layer,
  "signature" for a keyword the contract does not name, the step that next uses a rearrangement
  left out or what a discarded call's line assigns, for Exercise 3.1 the matrix the mutated line
  writes);
- the line ("file, line N, in function: code"): true when it is one of the mutant's lines;
- "This check uses your X.py, which does not work yet": true when X is a mutated module that fails
  a check of its own;
- a check's message that names a cause ("the heads are not registered as sub-modules"): true when
  the mutant's label is that cause.
Prints the share of false sentences, and with --verbose each false one.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnosis import Graded, grade, pair_cases, single_cases
from mutation import Mutant, _ends_in_layout, _next_line, single_mutants, solution_sources
from mutation_source import EXERCISE_BUILDERS, Source

ATTRIBUTE_STAGES = {
    "W_query": {"queries", "split_queries"},
    "W_key": {"keys", "split_keys"},
    "W_value": {"values", "split_values"},
    "out_proj": {"output"},
    "mask": {"masked", "mask"},
    "dropout": {"dropped"},
    "heads": {"concat"},
}
# Exercise 3.1: the matrix each attribute of SelfAttention_v1 receives
COPY_STAGES = {"W_query": "copied_query", "W_key": "copied_key", "W_value": "copied_value"}
WRITES_COPY = re.compile(r"\.(W_query|W_key|W_value)\.copy_\(")
# a check's message that names a cause: the cause it names (the dropout checks' messages name none:
# they ask to check the weights' dropout and what follows it)
CLAIMS = {"check.mha-heads-registered": "heads-not-registered"}
SPLITS = {"split_queries", "split_keys", "split_values"}
CONSTANT = re.compile(r"\.py:\d+ (-?\d+) -> -?\d+$")
OPERATOR_STAGES = {"extra-layer": {"returned", "parameters"}, "keyword": {"signature", "parameters"}}
# causes true of a mutant the corpus leaves unlabelled (its label counts what the grader must name;
# these are what it may truthfully name besides): the scores less √d_k instead of divided by it are
# the unscaled scores to the softmax, which ignores a shift by the same constant in every entry of a
# row, so the weights and all that follows are those of a missing scaling. Keyed by the operator and
# its detail after the mutant's "file.py:line " prefix
ALSO_TRUE = {("operation", "/ -> -"): {"missing-scaling"}}
SWAPPED = re.compile(r"swap lines (\d+) and (\d+)")
DECLARED = re.compile(r"\[checkpoint: ([^\]]*)\]")


def also_true(mutant: Mutant) -> set[str]:
    """`ALSO_TRUE`'s causes of the mutant, and mask-not-applied for the masking moved after the
    softmax: the weights are computed from the scores before the mask reaches them, and the masked
    scores are read by nothing, so the weights are those of a mask never applied."""
    found = set(ALSO_TRUE.get((mutant.operator, mutant.detail.split(" ", 1)[-1]), set()))
    swapped = SWAPPED.search(mutant.detail) if mutant.operator == "reorder" else None
    if swapped is not None:
        original = solution_sources()[mutant.module].splitlines()
        first, second = (_declared(original[int(line) - 1]) for line in swapped.groups())
        if "masked" in first and "weights" in second:
            found.add("mask-not-applied")
    return found


def _declared(line: str) -> set[str]:
    """The checkpoints a line of the reference declares (`[checkpoint: div=scaled, softmax=weights]`)."""
    match = DECLARED.search(line)
    return {part.split("=")[-1].strip() for part in match.group(1).split(",")} if match else set()


@dataclass
class Sentence:
    kind: str  # cause, checkpoint, line, blocked, message
    said: str
    true: bool
    why: str


def changed_lines(mutant: Mutant) -> set[int]:
    original = solution_sources()[mutant.module].splitlines()
    return {i for i, (a, b) in enumerate(zip(original, mutant.source.splitlines()), 1) if a != b}


def _heads_changed(mutant: Mutant) -> bool:
    """The mutant changes the number of heads an exercise asks for (`num_heads=12 -> 24`)."""
    changed = CONSTANT.search(mutant.detail)
    original = solution_sources()[mutant.module].splitlines()
    return changed is not None and any(
        f"num_heads={changed.group(1)}" in original[line - 1] for line in mutant.lines if 0 < line <= len(original)
    )


def stages(mutant: Mutant) -> set[str]:
    """The checkpoints the mutant's changed statements compute (see the module's docstring)."""
    src = Source(mutant.module, solution_sources()[mutant.module])
    changed = changed_lines(mutant) | set(mutant.lines)
    found = set(OPERATOR_STAGES.get(mutant.operator, set()))
    if mutant.module in EXERCISE_BUILDERS:
        found.add("parameters")
        if _heads_changed(mutant):  # the projections' sizes do not depend on it: the split is where it shows
            found |= SPLITS
    for statement, place in src.statements():
        if not changed & set(range(statement.lineno, statement.end_lineno + 1)):
            continue
        declared = set(place.checkpoints)
        later = place.body[place.body.index(statement) + 1 :]
        for following in later if not declared else ():
            declared = src.checkpoints(following)
            if declared:
                break
        found |= declared
        if place.function.name == "__init__":
            found.add("parameters")
            for node in ast.walk(statement):
                names = {node.attr} if isinstance(node, ast.Attribute) else set()
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names = {node.value}
                for name in names:
                    found |= ATTRIBUTE_STAGES.get(name, set())
        if mutant.module == "exercise3_1_weight_transfer":  # the matrix the mutated line writes
            mutated = mutant.source.splitlines()
            for line in changed & set(range(statement.lineno, statement.end_lineno + 1)):
                found |= {COPY_STAGES[name] for name in WRITES_COPY.findall(mutated[line - 1])}
        if _ends_in_layout(statement) or mutant.operator == "discard":  # `y = x`: the next use computes anew
            for line in _next_line(place):
                found |= next((src.checkpoints(s) for s, _ in src.statements() if s.lineno == line), set())
    return found


def audit(graded: Graded, outcome, mutants: list[Mutant], catalog) -> list[Sentence]:
    """Every sentence the report says about `outcome`'s diagnosis, each checked."""
    from grader.report.diagnosis import diagnosis_view
    from grader.report.messages import outcome_message

    labels = {m.label for m in mutants if m.label}
    labels |= set().union(*(also_true(m) for m in mutants))
    sentences: list[Sentence] = []
    diagnosis = outcome.diagnosis
    for cause in diagnosis.misconceptions if diagnosis else ((outcome.misconception,) if outcome.misconception else ()):
        for part in ("title", "explanation", "hint"):
            text = catalog.t(f"misconceptions.{cause}.{part}") if catalog.has(f"misconceptions.{cause}.{part}") else ""
            sentences.append(Sentence("cause", text or cause, cause in labels, f"labels {sorted(labels) or '-'}"))
    view = diagnosis_view(outcome, catalog)
    if diagnosis is not None and diagnosis.checkpoint:
        acceptable = set().union(*(stages(m) for m in mutants))
        true = diagnosis.checkpoint in acceptable
        sentences.append(
            Sentence("checkpoint", view.checkpoint if view else diagnosis.checkpoint, true, f"{sorted(acceptable)}")
        )
        if not diagnosis.misconceptions and catalog.has(f"diagnosis.hints.{diagnosis.checkpoint}"):
            sentences.append(
                Sentence("checkpoint", catalog.t(f"diagnosis.hints.{diagnosis.checkpoint}"), true, "its hint")
            )
    if view is not None and view.location is not None:
        where = view.location
        lines = {(m.module, line) for m in mutants for line in m.lines}
        true = (where.file.removesuffix(".py"), where.line) in lines
        sentences.append(Sentence("line", f"{where.file}:{where.line} {where.code}", true, f"{sorted(lines)}"))
    if outcome.blocked_by:
        own = {o.module for o in graded.outcomes if o.status != "passed" and not o.blocked_by}
        true = outcome.blocked_by in {m.module for m in mutants} and outcome.blocked_by in own
        sentences.append(Sentence("blocked", f"uses your {outcome.blocked_by}.py, which does not work yet", true, ""))
    key = outcome.detail.key if outcome.detail is not None else ""
    if key in CLAIMS:
        sentences.append(
            Sentence("message", str(outcome_message(outcome, catalog)), CLAIMS[key] in labels, f"{labels}")
        )
    return sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=100, help="diagnoses to audit")
    parser.add_argument("--cases", type=int, default=160, help="single mutants to grade (and a fifth as many pairs)")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    from grader.i18n import Catalog

    rng = random.Random(args.seed)
    mutants = rng.sample(single_mutants(), args.cases)
    cases = single_cases(mutants)
    by_name = {case.name: mutant for case, mutant in zip(cases, mutants)}
    work = Path(tempfile.mkdtemp(prefix="truth-audit-"))
    try:
        graded = grade(cases, work / "singles")
        pairs = pair_cases(graded, by_name, args.cases // 10, args.seed)
        pairs += pair_cases(graded, by_name, args.cases // 10, args.seed, stacked=True)
        graded += grade(pairs, work / "pairs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    said = [
        (g, o)
        for g in graded
        for o in g.outcomes
        if o.status != "passed" and (o.diagnosis is not None or o.misconception or o.blocked_by)
    ]
    sample = rng.sample(said, min(args.sample, len(said)))
    catalog = Catalog("en")
    checked: list[tuple[Graded, object, Sentence]] = []
    for g, outcome in sample:
        parts = [by_name[name] for name in re.split(r"\+", g.case.name)]
        checked += [(g, outcome, s) for s in audit(g, outcome, parts, catalog)]
    false = [item for item in checked if not item[2].true]
    kinds = Counter(s.kind for _, _, s in checked)
    wrong = Counter(s.kind for _, _, s in false)
    print(f"diagnoses audited: {len(sample)} (of {len(said)} in {len(graded)} graded mutants)")
    print(f"sentences checked: {len(checked)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")
    share = 100 * len(false) / len(checked) if checked else 0.0
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(wrong.items())) or "none"
    print(f"false sentences: {len(false)} = {share:.1f} % ({by_kind})")
    if args.verbose:
        for g, outcome, sentence in false:
            print(
                f"  {g.case.name} {g.case.detail} | {outcome.id}: [{sentence.kind}] {sentence.said!r} ({sentence.why})"
            )


if __name__ == "__main__":
    main()
