"""Known-buggy variants of the reference, one module per student module: each variant reproduces
one misconception by overriding functions or classes of the solution module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.diagnosis.catalogue.per_module import collect
from grader.probe_outputs import ProbeResults


@dataclass(frozen=True)
class Variant:
    id: str  # the misconception it reproduces
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # module -> attribute -> object

    @property
    def modules(self) -> set[str]:
        return set(self.overrides)


@dataclass(frozen=True)
class VariantRun:
    """A variant and its outputs on the probes of the modules it changes (grader.answer_key)."""

    variant: Variant
    results: ProbeResults


def all_variants() -> list[Variant]:
    """Every module's VARIANTS list, in book order (a module without variants may be absent), then
    the framework traps'."""
    return collect(__name__, "VARIANTS", also=["framework_traps"])
