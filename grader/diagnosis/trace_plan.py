"""Which failing probes to run again under the tracer, and which traces stand for others
(`Diagnoser.trace_plan`); the reference's code path of a probe."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from grader.diagnosis.blame import caller_is_blamed, failing_modules_relied_on
from grader.diagnosis.matching import same
from grader.diagnosis.shared_paths import same_lines_for_every_input, uses_modules
from grader.diagnosis.walk import checkpoints
from grader.probe_outputs import ProbeOutputs
from grader.records import ProbeError, TestOutcome

if TYPE_CHECKING:
    from grader.diagnosis import Diagnoser


def trace_plan(
    diagnoser: Diagnoser,
    outcomes: list[TestOutcome],
    student: ProbeOutputs,
    uses: Mapping[str, tuple[str, ...]] | None = None,
    sources: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The probes worth tracing, and the probes that share one of theirs (probe -> the traced one).

    Worth tracing: the probes of failing tests whose results differ from the reference's, where
    the student's code ran: values, or an exception of its own (not a missing module, an
    unfinished stub, a timeout or a crash, which a second run would only repeat). A test
    blocked by another broken module is not diagnosed (`diagnose_submission`), unless blame
    moves it back to its own module: its probes are traced only for the tests that are. Nor
    is a test whose trace would depart where the tests it relies on do
    (`departs_where_it_relies`): it gets the diagnosis of those tests (`diagnose_submission`),
    and the report blames their section (`blame.attribute_to_earlier_sections`); a mistake
    of its own is named once what it relies on works.

    Shared: a failing test whose outputs equal a known-buggy variant's (`Diagnoser.variant`) has that
    variant's one cause. Its probe runs the same code as an earlier traced probe when both
    run the reference through the same functions and both use (or both replace) the
    parameters as the constructors made them (`code_path`), and the student's code there
    cannot take other lines for other inputs (`shared_paths.same_lines_for_every_input` on the
    submission's `sources`: no `if x.dtype == ...`, no `if self.training`...); then the
    student's code departs at the same place in both, and one trace locates it for both
    tests. Without `sources`, nothing is shared."""
    names: list[str] = []
    groups: dict[tuple, list[str]] = {}  # (variant, code path) -> its probes
    for outcome in outcomes if diagnoser.traced else []:
        if (
            outcome.status == "passed"
            or (outcome.blocked_by and not caller_is_blamed(outcome, outcomes, uses or {}))
            or departs_where_it_relies(diagnoser, outcome, outcomes, student, uses or {}, sources)
        ):
            continue
        for name in outcome.probes:
            result = student.results.get(name)
            if name in names or same(result, diagnoser.reference.results.get(name)):
                continue
            if isinstance(result, ProbeError) and (
                result.kind not in ("exception", "contract") or result.exc_type == "NotImplementedError"
            ):
                continue
            names.append(name)
            variant = diagnoser.variant(outcome, student) if outcome.error is None else None  # kept per test
            if (
                variant
                and sources is not None
                and same_lines_for_every_input((call[0] for call in code_path(name)[0]), sources)
            ):
                groups.setdefault((variant, code_path(name)), []).append(name)
    shared: dict[str, str] = {}
    for group in groups.values():  # the one traced: the probe that runs the fewest ops
        traced = min(group, key=reference_ops)
        shared.update((name, traced) for name in group if name != traced)
    names = [name for name in names if name not in shared]
    return names, shared


def departs_where_it_relies(
    diagnoser: Diagnoser,
    outcome: TestOutcome,
    outcomes: list[TestOutcome],
    student: ProbeOutputs,
    uses: Mapping[str, tuple[str, ...]],
    sources: Mapping[str, str] | None,
) -> bool:
    """`outcome`'s test fails with wrong values only, and relies on failing tests of earlier
    sections (`failing_modules_relied_on`) whose modules the student's code really uses
    (`paths.uses_modules`: a name of theirs used, not only imported); the student's code that
    its probes run takes the same lines for every input (`shared_paths.same_lines_for_every_input`,
    as for a shared trace), and no known-buggy variant explains its outputs (which would be a
    cause of its own). Then its run reaches that section's mistake on the same line as that
    section's own tests, before anything of its own module is compared."""
    if sources is None or outcome.error is not None:
        return False
    broken = failing_modules_relied_on(outcome, outcomes, uses)
    return (
        bool(broken)
        and uses_modules(outcome.module, broken, sources)
        and all(
            same_lines_for_every_input((call[0] for call in code_path(name)[0]), sources) for name in outcome.probes
        )
        and diagnoser.variant(outcome, student) is None
    )


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
