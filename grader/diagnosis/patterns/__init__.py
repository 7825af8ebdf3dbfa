"""Error patterns: exceptions whose type and message give a misconception away. One module per
student module defines PATTERNS; `all_patterns()` collects them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

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
        return (error is not None and error.kind == "exception" and (not exc_type or error.exc_type == exc_type)
                and bool(regex.search(error.message)))

    return matches



MODULES = (
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
)


def all_patterns() -> list[Pattern]:
    import importlib

    patterns: list[Pattern] = []
    for module in MODULES:
        try:
            patterns += importlib.import_module(f"{__name__}.{module}").PATTERNS
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module}":
                raise
    return patterns
