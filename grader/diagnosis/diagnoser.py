"""The `Diagnoser` of one track's run: which failing probes to trace again, and the diagnosis of each
submission (see the package's docstring for the evidence, in order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from grader.diagnosis.blame import (
    caller_is_blamed,
    decide_blame,
    dependencies_pass,
    failing_modules_relied_on,
    located_in_own_module,
)
from grader.diagnosis.catalogue.patterns import all_patterns
from grader.diagnosis.catalogue.signatures import bias_charged_to_class, class_mishandles_bias
from grader.diagnosis.catalogue.variants import VariantRun
from grader.diagnosis.causes import diagnosed_test
from grader.diagnosis.consolidate import consolidate
from grader.diagnosis.evidence import Evidence, Findings
from grader.diagnosis.known_variants import KnownVariants
from grader.diagnosis.matching import same
from grader.diagnosis.shared_paths import same_lines_for_every_input, uses_modules
from grader.diagnosis.trace_plan import code_path, reference_ops
from grader.probe_outputs import ProbeOutputs
from grader.records import ProbeError, TestOutcome


class Diagnoser:
    def __init__(self, reference: ProbeOutputs, runs: list[VariantRun], traced: bool = True):
        """`traced`: the track's code runs torch ops that the tracer records, and its sources are
        Python written like the reference's (the PyTorch track). On the MindSpore track the tracer
        sees none of the student's operations: its diagnosis is the error patterns, the variants
        and the behaviour signatures only."""
        self.reference = reference
        self.runs = runs
        self.traced = traced
        self.patterns = all_patterns()
        self.known_variants = KnownVariants(reference, runs)
        self.findings = Findings()  # the recogniser's, per distinct trace of this run

    def pattern(self, outcome: TestOutcome) -> str | None:
        if outcome.error is None:
            return None
        for pattern in self.patterns:
            if pattern.module in ("", outcome.module) and pattern.matches(outcome):
                return pattern.id
        return None

    def variant(self, outcome: TestOutcome, student: ProbeOutputs) -> str | None:
        """The known-buggy variant whose outputs the student's equal on the test's probes, where it
        differs from the reference; worked out once per test of a submission (`trace_plan` asks
        first, the diagnosis again), and forgotten with the submission's outputs."""
        run = self.variant_run(outcome, student)
        return run.variant.id if run is not None else None

    def variant_run(self, outcome: TestOutcome, student: ProbeOutputs) -> VariantRun | None:
        """`variant`'s run: which modules the variant changes, too."""
        return self.known_variants.run_for(outcome, student)

    def diagnose(self, outcome: TestOutcome, student: ProbeOutputs) -> str | None:
        """The misconception from the test's own evidence (error pattern or variant), if any."""
        if outcome.status == "passed" or outcome.blocked_by:
            return None
        return self.pattern(outcome) or (self.variant(outcome, student) if outcome.probes else None)

    def probes_to_trace(
        self,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]] | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> list[str]:
        """The probes to trace (`trace_plan`)."""
        return self.trace_plan(outcomes, student, uses, sources)[0]

    def trace_plan(
        self,
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

        Shared: a failing test whose outputs equal a known-buggy variant's (`variant`) has that
        variant's one cause. Its probe runs the same code as an earlier traced probe when both
        run the reference through the same functions and both use (or both replace) the
        parameters as the constructors made them (`trace_plan.code_path`), and the student's code
        there cannot take other lines for other inputs (`shared_paths.same_lines_for_every_input`
        on the submission's `sources`: no `if x.dtype == ...`, no `if self.training`...); then the
        student's code departs at the same place in both, and one trace locates it for both
        tests. Without `sources`, nothing is shared."""
        names: list[str] = []
        groups: dict[tuple, list[str]] = {}  # (variant, code path) -> its probes
        for outcome in outcomes if self.traced else []:
            if (
                outcome.status == "passed"
                or (outcome.blocked_by and not caller_is_blamed(outcome, outcomes, uses or {}))
                or self.departs_where_it_relies(outcome, outcomes, student, uses or {}, sources)
            ):
                continue
            for name in outcome.probes:
                if name in names or not self._worth_tracing(student.results.get(name), name):
                    continue
                names.append(name)
                variant = self.variant(outcome, student) if outcome.error is None else None  # kept per test
                if variant and sources is not None and _same_lines(name, sources):
                    groups.setdefault((variant, code_path(name)), []).append(name)
        shared: dict[str, str] = {}
        for group in groups.values():  # the one traced: the probe that runs the fewest ops
            traced = min(group, key=reference_ops)
            shared.update((name, traced) for name in group if name != traced)
        return [name for name in names if name not in shared], shared

    def _worth_tracing(self, result: Any, name: str) -> bool:
        """Whether the student's result of probe `name` differs from the reference's where their code
        ran: values, or an exception of its own."""
        if same(result, self.reference.results.get(name)):
            return False
        return not isinstance(result, ProbeError) or (
            result.kind in ("exception", "contract") and result.exc_type != "NotImplementedError"
        )

    def departs_where_it_relies(
        self,
        outcome: TestOutcome,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]],
        sources: Mapping[str, str] | None,
    ) -> bool:
        """`outcome`'s test fails with wrong values only, and relies on failing tests of earlier
        sections (`failing_modules_relied_on`) whose modules the student's code really uses
        (`shared_paths.uses_modules`: a name of theirs used, not only imported); the student's code
        that its probes run takes the same lines for every input (as for a shared trace), and no
        known-buggy variant explains its outputs (which would be a cause of its own). Then its run
        reaches that section's mistake on the same line as that section's own tests, before
        anything of its own module is compared."""
        if sources is None or outcome.error is not None:
            return False
        broken = failing_modules_relied_on(outcome, outcomes, uses)
        return (
            bool(broken)
            and uses_modules(outcome.module, broken, sources)
            and all(_same_lines(name, sources) for name in outcome.probes)
            and self.variant(outcome, student) is None
        )

    def diagnose_submission(
        self,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]] | None = None,
        sources: Mapping[str, str] | None = None,
        traces: Mapping[str, Any] | None = None,
        shared: Mapping[str, str] | None = None,
    ) -> list[TestOutcome]:
        """Blame, then a misconception and a `Diagnosis` for every failing test of one submission:
        the outcomes anew (each test's: `grader.diagnosis.causes`). `traces`: probe -> the tracer's
        document (untrusted; see grader.diagnosis.trace.documents); `shared`: probe -> the traced
        probe whose trace stands for it (`trace_plan`'s, worked out again when not given)."""
        uses = uses or {}
        outcomes, moved = decide_blame(outcomes, uses)
        if traces and shared is None:
            shared = self.trace_plan(outcomes, student, uses, sources)[1]
        evidence = self._evidence(outcomes, student, uses, sources, traces, shared)
        untraced: list[int] = []  # left untraced as they rely on a broken section (`trace_plan`)
        charged: list[int] = []  # blocked by the class they configure (`bias_charged_to_class`)
        for index, outcome in enumerate(outcomes):  # each replaced by its diagnosed self, in order
            if outcome.status == "passed" or outcome.blocked_by:
                continue
            owner = bias_charged_to_class(outcome, outcomes, student, self.reference)
            if owner is not None:  # the class's own tests name it; charged there, once
                outcomes[index] = replace(outcome, blocked_by=owner, misconception=None)
                charged.append(index)
                continue
            if self.traced and self.departs_where_it_relies(outcome, outcomes, student, uses, sources):
                untraced.append(index)  # that section's own tests name the cause
            run = self.variant_run(outcome, student) if outcome.probes else None
            outcomes[index] = diagnosed_test(
                outcome,
                outcomes,
                self.pattern(outcome),
                run,
                self.reference,
                student,
                evidence,
                moved=outcome.id in moved,
                relies=index in untraced,
                sources=sources or {},
            )
        outcomes = consolidate(outcomes)
        for index in untraced:  # the line the tests it relies on found, in their own module
            relied = located_in_own_module(uses.get(outcomes[index].id, ()), outcomes)
            if outcomes[index].diagnosis is None and relied is not None:
                outcomes[index] = replace(outcomes[index], diagnosis=relied.diagnosis)
        for index in charged:  # the diagnosis the class's own tests found
            outcomes[index] = _with_owners_diagnosis(outcomes[index], outcomes)
        return outcomes

    def _evidence(
        self,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]],
        sources: Mapping[str, str] | None,
        traces: Mapping[str, Any] | None,
        shared: Mapping[str, str] | None,
    ) -> Evidence:
        """What the student's traces say, read once per probe (none on an untraced track)."""
        return Evidence(
            traces or {} if self.traced else {},
            sources or {} if self.traced else {},
            dependencies_pass(outcomes, uses),
            self.findings,
            shared if self.traced else None,
            lambda module: class_mishandles_bias(module, student, self.reference),
        )


def _same_lines(probe: str, sources: Mapping[str, str]) -> bool:
    """Whether the student's code that `probe` runs takes the same lines for every input."""
    return same_lines_for_every_input((call[0] for call in code_path(probe)[0]), sources)


def _with_owners_diagnosis(outcome: TestOutcome, outcomes: list[TestOutcome]) -> TestOutcome:
    """A test charged to the class it configures, with the diagnosis that class's own tests found."""
    own = [o for o in outcomes if o.module == outcome.blocked_by and o.status != "passed" and not o.blocked_by]
    relied = next((o for o in own if o.diagnosis is not None and o.diagnosis.location is not None), None)
    if outcome.diagnosis is None and relied is not None:
        return replace(outcome, diagnosis=relied.diagnosis)
    return outcome
