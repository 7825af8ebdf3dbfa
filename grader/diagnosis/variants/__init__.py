"""Known-buggy variants of the reference, one module per student module: each variant reproduces
one misconception by overriding functions or classes of the solution module."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

MODULES = (
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
)


@dataclass(frozen=True)
class Variant:
    id: str  # the misconception it reproduces
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # module -> attribute -> object

    @property
    def modules(self) -> set[str]:
        return set(self.overrides)


def all_variants() -> list[Variant]:
    """Every module's VARIANTS list, in book order (a module without variants may be absent)."""
    variants: list[Variant] = []
    for module in MODULES:
        try:
            variants += importlib.import_module(f"{__name__}.{module}").VARIANTS
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module}":
                raise
    return variants
