"""Diagnosis: name the misconception behind a failing test, from behaviour alone.

Two recognisers, tried in order:
1. error patterns: an exception whose type and message are the telltale of a known mistake;
2. known-buggy variants of the reference: each variant reproduces one misconception; the student's
   outputs on every probe the failing test used are compared with the variant's outputs on the
   same probes (computed once per run). A variant names a test only if it differs from the
   reference there and the student matches it everywhere the test looked.
Correct code passes its tests and so is never diagnosed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from grader.probes import PROBES, load_all
from grader.records import ProbeError, TestOutcome
from grader.suites.seam import ModuleNamespace, ProbeResults, Seam, run_in_process
from grader.diagnosis.catalogue import CATALOGUE, Misconception
from grader.diagnosis.patterns import all_patterns
from grader.diagnosis.variants import Variant, all_variants

MATCH_ATOL = 1e-4


@dataclass(frozen=True)
class VariantRun:
    variant: Variant
    results: ProbeResults


def variant_runs() -> list[VariantRun]:
    """Every variant's outputs on the probes of the modules it changes, computed once per run."""
    load_all()
    runs = []
    for variant in all_variants():
        probes = sorted(name for name, probe in PROBES.items() if probe.module in variant.modules)
        ns = ModuleNamespace("solutions", variant.overrides)
        runs.append(VariantRun(variant, run_in_process(ns, probes=probes)))
    return runs


def same(a: Any, b: Any) -> bool:
    """Outputs (or errors) equal up to a small tolerance."""
    if isinstance(a, ProbeError) or isinstance(b, ProbeError):
        return (isinstance(a, ProbeError) and isinstance(b, ProbeError) and a.kind == b.kind
                and a.exc_type == b.exc_type and a.message == b.message and a.key == b.key)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
            return False
        if a.dtype != b.dtype:
            a, b = a.double(), b.double()
        # equal_nan: a NaN only matches a NaN, an infinity only the same infinity
        return torch.allclose(a, b, atol=MATCH_ATOL, rtol=1e-3, equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


class Diagnoser:
    def __init__(self, reference: Seam, runs: list[VariantRun]):
        self.reference = reference
        self.runs = runs
        self.patterns = all_patterns()
        self._differs: dict[tuple[int, tuple[str, ...]], bool] = {}  # (run, probes) -> unlike the reference

    def _differs_from_reference(self, index: int, relevant: tuple[str, ...]) -> bool:
        """Whether variant `index` behaves unlike the reference on these probes (the same for every student)."""
        key = (index, relevant)
        if key not in self._differs:
            results = self.runs[index].results
            self._differs[key] = any(not same(results[name], self.reference.results.get(name)) for name in relevant)
        return self._differs[key]

    def diagnose(self, outcome: TestOutcome, student: Seam) -> str | None:
        if outcome.status == "passed" or outcome.blocked_by:
            return None
        for pattern in self.patterns:
            if pattern.module in ("", outcome.module) and outcome.error is not None and pattern.matches(outcome):
                return pattern.id
        probes = outcome.probes
        if not probes:
            return None
        for index, run in enumerate(self.runs):
            relevant = tuple(name for name in probes if name in run.results)
            if not relevant or not self._differs_from_reference(index, relevant):
                continue  # this variant behaves like the reference where the test looked
            if all(same(student.results.get(name), run.results[name]) for name in relevant):
                return run.variant.id
        return None


__all__ = ["CATALOGUE", "Diagnoser", "Misconception", "VariantRun", "variant_runs"]
