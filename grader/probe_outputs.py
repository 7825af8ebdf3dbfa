"""The outputs of the probes of one body of code (the student's, the reference's, a variant's),
looked up by probe name: what the sandbox hands the trusted side, read by the hidden suites
(`student.run(probe)`, `reference.run(probe)`) and by the diagnosis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grader.probes import PROBES
from grader.records import ProbeError

Outputs = Mapping[str, Any]
ProbeResults = dict[str, "dict[str, Any] | ProbeError"]


class StudentError(Exception):
    """The student's code produced no outputs for a probe (exception, timeout, missing module...)."""

    def __init__(self, probe: str, error: ProbeError):
        super().__init__(f"{probe}: {error.kind} {error.exc_type} {error.message}".strip())
        self.probe = probe
        self.error = error


class ProbeOutputs:
    """Probe outputs of one body of code, looked up by probe name."""

    def __init__(self, results: ProbeResults):
        self.results = results
        self.accessed: list[str] = []

    def run(self, probe: str) -> Outputs:
        if probe not in PROBES:
            raise KeyError(f"unknown probe {probe!r}")  # a bug in a hidden suite, not the student's
        if probe not in self.accessed:
            self.accessed.append(probe)
        result = self.results.get(probe)
        if result is None:
            result = ProbeError(kind="crash", key="sandbox.no-result")
        if isinstance(result, ProbeError):
            raise StudentError(probe, result)
        return result

    def form_difference(self, reference: ProbeOutputs) -> tuple | None:
        """How the outputs of the probes this test read differ in form from the reference's
        (see `form_difference`), forged forms first."""
        found = [d for probe in self.accessed if (d := form_difference(self.outputs(probe), reference.outputs(probe)))]
        return next((d for d in found if d[0] == "form"), found[0] if found else None)

    def outputs(self, probe: str) -> Outputs | None:
        """Outputs without raising or recording access (for diagnosis and pictures)."""
        result = self.results.get(probe)
        return None if result is None or isinstance(result, ProbeError) else result


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return "tensor" if hasattr(value, "shape") else type(value).__name__


def form_difference(got: Any, want: Any, depth: int = 0) -> tuple | None:
    """The first way `got` differs in form from `want`, the reference's outputs of one probe:
    ("form",) when a key is missing or a value is of another kind, which only a child that forged
    its results can cause (a probe's own code builds the result), or ("shape", got, expected) for
    tensors of other shapes, which a student's code can well return. None when the forms agree."""
    if depth > 8 or want is None:
        return None
    if _kind(got) != _kind(want):
        return ("form",)
    if isinstance(want, dict):
        if set(got) != set(want):
            return ("form",)
        pairs = [(got[key], want[key]) for key in want]
    elif isinstance(want, (list, tuple)):
        if not want:
            return None
        kinds = {_kind(item) for item in want}
        if (len(kinds) > 1 or kinds == {"tensor"}) and len(got) != len(want):
            # a record such as (name, shape, trainable) has a fixed length, and so has a probe's
            # list of tensors (one per head, per batch item...): the probe's code fixes its length
            return ("form",)
        pairs = [(item, want[min(index, len(want) - 1)]) for index, item in enumerate(list(got)[:64])]
    elif _kind(want) == "tensor" and tuple(got.shape) != tuple(want.shape):
        return ("shape", list(got.shape), list(want.shape))
    else:
        return None
    found = [difference for g, w in pairs if (difference := form_difference(g, w, depth + 1))]
    return next((d for d in found if d[0] == "form"), found[0] if found else None)
