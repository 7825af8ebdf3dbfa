"""One cause, one name, across the tests of a submission."""

from __future__ import annotations

from dataclasses import replace

from grader.records import TestOutcome

# a cause that is a special case of another in the same module: a divisor that is sometimes 1
SPECIAL_CASES = {"missing-scaling": "wrong-scaling"}


def consolidate(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """One cause, one name: when one line of a submission shows both a cause and its special case (a
    divisor that is a wrong size, which is 1 for some inputs), the special case is the general one.
    Two lines are two mistakes, each with its own name."""
    named: dict[tuple[str, int], set[str]] = {}
    for o in outcomes:
        if o.diagnosis is not None and o.diagnosis.location is not None:
            where = (o.diagnosis.location.file, o.diagnosis.location.line)
            named.setdefault(where, set()).update(o.diagnosis.misconceptions)
    return [_general(outcome, named) for outcome in outcomes]


def _general(outcome: TestOutcome, named_at: dict[tuple[str, int], set[str]]) -> TestOutcome:
    diagnosis = outcome.diagnosis
    if diagnosis is None or diagnosis.location is None:
        return outcome
    named = named_at.get((diagnosis.location.file, diagnosis.location.line), set())
    causes = list(
        dict.fromkeys(
            SPECIAL_CASES[m] if m in SPECIAL_CASES and SPECIAL_CASES[m] in named else m
            for m in diagnosis.misconceptions
        )
    )
    if causes == list(diagnosis.misconceptions):
        return outcome
    return replace(outcome, diagnosis=replace(diagnosis, misconceptions=tuple(causes)), misconception=causes[0])
