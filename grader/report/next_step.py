"""Where a student should go next: the failing check whose fix unblocks the most points.

Failing checks come in groups that one fix may mend together: the checks one named cause explains
in one module, else each check on its own. A group's weight is the points its checks lose, plus
the points of every check blocked by its module (they wait for that module to work). The group
with the most weight comes first; among equals, the first in book order. A check blocked by
another module is never where to start: its points count for that module's groups.
"""

from __future__ import annotations

from collections.abc import Container

from grader.records import TestOutcome


def _cause(test: TestOutcome) -> str | None:
    if test.misconception:
        return test.misconception
    diagnosis = test.diagnosis
    return diagnosis.misconceptions[0] if diagnosis is not None and diagnosis.misconceptions else None


def first_to_fix(tests: list[TestOutcome], skip: Container[str] = frozenset()) -> TestOutcome | None:
    """The check to start with (see the module's docstring); `tests` in book order, `skip` the
    checks the grader itself could not run."""
    failing = [t for t in tests if t.status != "passed" and t.id not in skip]
    waiting: dict[str, float] = {}
    for test in failing:
        if test.blocked_by:
            waiting[test.blocked_by] = waiting.get(test.blocked_by, 0.0) + test.max_points - test.points
    groups: dict[tuple[str, str], list[TestOutcome]] = {}
    for test in failing:
        if not test.blocked_by:
            cause = _cause(test)
            groups.setdefault((test.module, f"cause:{cause}" if cause else f"check:{test.id}"), []).append(test)
    best: tuple[float, TestOutcome] | None = None
    for (module, _), members in groups.items():
        weight = sum(t.max_points - t.points for t in members) + waiting.get(module, 0.0)
        if best is None or weight > best[0]:
            best = (weight, members[0])
    return best[1] if best is not None else None
