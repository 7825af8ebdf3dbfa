"""Where a student should start: one check, the same in every channel.

The rule, in the book's order (3.3, 3.4, Exercise 3.1, 3.5, 3.6, Exercise 3.2, Exercise 3.3, the
order of the chapter and of check.py): a module that fails to import comes first (nothing of it can
be checked until it does), the earliest in the book; else the earliest failing check of the earliest
section, in the order of its checks. A check waiting for another module (`blocked_by`) is where to
start only when nothing else fails: its fix is in that module. The checks the grader itself could
not run are never where to start. Every channel (feedback.html and .md, Gradescope, PrairieLearn,
nbgrader) takes its "where to go next" from `first_to_fix`; the student's check.py follows the same
rule over its public checks.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from grader.records import TestOutcome
from grader.sections import BOOK_ORDER as MODULES_IN_BOOK_ORDER
from grader.sections import MODULE_SECTIONS

BOOK_ORDER: tuple[str, ...] = tuple(MODULE_SECTIONS[module] for module in MODULES_IN_BOOK_ORDER)

_NOT_IMPORTED = ("import.missing", "import.missing-notebook", "import.poisoned")


def fails_to_import(test: TestOutcome) -> bool:
    """The check could not run because its own module stops while Python imports it (a syntax
    error, an exception at its top level); a missing module is not one."""
    error = test.error
    return (
        error is not None
        and error.kind == "import"
        and error.key not in _NOT_IMPORTED
        and not test.blocked_by
        and error.module in ("", test.module)
    )


def book_position(section: str) -> int:
    return BOOK_ORDER.index(section) if section in BOOK_ORDER else len(BOOK_ORDER)


def first_to_fix(tests: Sequence[TestOutcome], skip: Container[str] = frozenset()) -> TestOutcome | None:
    """The check to start with (see the module's docstring); `tests` in the order of their suites,
    `skip` the checks the grader itself could not run."""
    failing = [(book_position(t.section), index, t) for index, t in enumerate(tests) if t.status != "passed"]
    failing = [entry for entry in failing if entry[2].id not in skip]
    for choose in (fails_to_import, lambda t: not t.blocked_by, lambda t: True):
        chosen = [entry for entry in failing if choose(entry[2])]
        if chosen:
            return min(chosen, key=lambda entry: entry[:2])[2]
    return None
