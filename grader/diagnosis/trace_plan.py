"""The reference's code path of a probe, and what tracing it costs: what `Diagnoser.trace_plan`
needs to let one probe's trace stand for another's."""

from __future__ import annotations

import functools

from grader.diagnosis.walk import checkpoints


@functools.cache
def code_path(probe: str) -> tuple[frozenset[tuple[str | None, str, int]], bool]:
    """The functions of the code under test that `probe` runs (file, name, first line) on the
    reference, and whether it uses parameters as the constructors made them (a seeded run)."""
    known = checkpoints.reference(probe)
    return (
        frozenset((call.file, call.function, call.line) for call in known.trace.calls),
        any(instance.seeded for instance in known.instances),
    )


def reference_ops(probe: str) -> int:
    """How many ops the reference's trace of `probe` has (what tracing it costs, roughly)."""
    return len(checkpoints.reference(probe).trace.ops)
