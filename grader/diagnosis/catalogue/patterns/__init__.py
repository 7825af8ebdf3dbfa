"""Error patterns: exceptions whose type and message give a misconception away. One module per
student module defines PATTERNS; `all_patterns()` collects them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from grader.diagnosis.catalogue.per_module import collect
from grader.records import TestOutcome


@dataclass(frozen=True)
class Pattern:
    id: str
    module: str  # the student module whose tests it applies to ("" for any)
    matches: Callable[[TestOutcome], bool]


def message_pattern(pattern: str, exc_type: str = "") -> Callable[[TestOutcome], bool]:
    regex = re.compile(pattern)

    def matches(outcome: TestOutcome) -> bool:
        error = outcome.error
        return (
            error is not None
            and error.kind == "exception"
            and (not exc_type or error.exc_type == exc_type)
            and bool(regex.search(error.message))
        )

    return matches


def all_patterns() -> list[Pattern]:
    """Every module's PATTERNS list, in book order, then the framework traps'."""
    return collect(__name__, "PATTERNS", also=["framework_traps"])
