"""Diagnosis: name the misconception behind a failing test and point at the student's line.

Blame first (`blame`): a failure whose exception surfaced in another module that passes its own
tests is its own module's. Then, for each failing test, the evidence in order:
1. error patterns: an exception whose type and message are the telltale of a known mistake;
2. known-buggy variants of the reference (`variants`, generated from the pipeline description):
   the student's outputs on every probe the test used equal a variant's, where it differs from
   the reference (computed once per run);
3. the recogniser (`recognise`) on the student's traces of the test's probes (or, for tests one
   variant explains, of a probe that runs the same functions: `Diagnoser.trace_plan`), when the
   trusted side has them: the checkpoint where the computation departs, the named mistakes (two when
   they sit at different checkpoints), the constructor statements that differ, and the line;
4. behaviour signatures (`signatures`): NaN at the first token, eval outputs that differ...
Correct code passes its tests and so is never diagnosed. A trace is untrusted data: it only
shapes the wording of the student's own feedback, never a score.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from grader.diagnosis import checkpoints
from grader.diagnosis.blame import (
    BUILDERS,
    caller_is_blamed,
    decide_blame,
    dependencies_pass,
    failing_modules_relied_on,
    located_in_own_module,
)
from grader.diagnosis.catalogue import CATALOGUE, Misconception
from grader.diagnosis.evidence import Evidence, Findings
from grader.diagnosis.paths import same_lines_for_every_input, uses_modules
from grader.diagnosis.patterns import all_patterns
from grader.diagnosis.quotes import frame
from grader.diagnosis.signatures import configuration_differs, signatures
from grader.diagnosis.variants import VariantRun
from grader.probe_outputs import ProbeOutputs
from grader.records import Diagnosis, ProbeError, TestOutcome

MATCH_ATOL = 1e-4


def same(a: Any, b: Any) -> bool:
    """Outputs (or errors) equal up to a small tolerance."""
    if isinstance(a, ProbeError) or isinstance(b, ProbeError):
        return (
            isinstance(a, ProbeError)
            and isinstance(b, ProbeError)
            and a.kind == b.kind
            and a.exc_type == b.exc_type
            and a.message == b.message
            and a.key == b.key
        )
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
            return False
        if a.dtype != b.dtype:
            a, b = a.double(), b.double()
        # equal_nan: a NaN only matches a NaN, an infinity only the same infinity; equal tensors
        # (about half of a class's comparisons) cost a thirtieth of allclose's time
        return torch.equal(a, b) or torch.allclose(a, b, atol=MATCH_ATOL, rtol=1e-3, equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


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
        self._differs: dict[tuple[int, tuple[str, ...]], bool] = {}  # (run, probes) -> unlike the reference
        self._candidates: dict[tuple[str, ...], list[tuple[VariantRun, tuple[str, ...]]]] = {}  # `_unlike_reference`
        self._variants: weakref.WeakKeyDictionary[ProbeOutputs, dict[tuple, str | None]] = weakref.WeakKeyDictionary()
        self.findings = Findings()  # the recogniser's, per distinct trace of this run

    def _differs_from_reference(self, index: int, relevant: tuple[str, ...]) -> bool:
        """Whether variant `index` behaves unlike the reference on these probes (the same for every student)."""
        key = (index, relevant)
        if key not in self._differs:
            results = self.runs[index].results
            self._differs[key] = any(not same(results[name], self.reference.results.get(name)) for name in relevant)
        return self._differs[key]

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
        known = self._variants.setdefault(student, {})
        key = (outcome.id, outcome.probes)
        if key not in known:
            known[key] = self._variant(outcome, student)
        return known[key]

    def _variant(self, outcome: TestOutcome, student: ProbeOutputs) -> str | None:
        for run, relevant in self._unlike_reference(outcome.probes):
            if all(same(student.results.get(name), run.results[name]) for name in relevant):
                return run.variant.id
        return None

    def _unlike_reference(self, probes: tuple[str, ...]) -> list[tuple[VariantRun, tuple[str, ...]]]:
        """The variants that behave unlike the reference on these probes (where the test looked),
        with those of the probes they ran, in order; the same for every student."""
        if probes not in self._candidates:
            candidates = []
            for index, run in enumerate(self.runs):
                relevant = tuple(name for name in probes if name in run.results)
                if relevant and self._differs_from_reference(index, relevant):
                    candidates.append((run, relevant))
            self._candidates[probes] = candidates
        return self._candidates[probes]

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
        parameters as the constructors made them (`code_path`), and the student's code there
        cannot take other lines for other inputs (`paths.same_lines_for_every_input` on the
        submission's `sources`: no `if x.dtype == ...`, no `if self.training`...); then the
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
                result = student.results.get(name)
                if name in names or same(result, self.reference.results.get(name)):
                    continue
                if isinstance(result, ProbeError) and (
                    result.kind not in ("exception", "contract") or result.exc_type == "NotImplementedError"
                ):
                    continue
                names.append(name)
                variant = self.variant(outcome, student) if outcome.error is None else None  # kept per test
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
        self,
        outcome: TestOutcome,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]],
        sources: Mapping[str, str] | None,
    ) -> bool:
        """`outcome`'s test fails with wrong values only, and relies on failing tests of earlier
        sections (`failing_modules_relied_on`) whose modules the student's code really uses
        (`paths.uses_modules`: a name of theirs used, not only imported); the student's code that
        its probes run takes the same lines for every input (`paths.same_lines_for_every_input`,
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
        the outcomes anew. `traces`: probe -> the tracer's document (untrusted; see
        grader.diagnosis.trace_documents); `shared`: probe -> the traced probe whose trace stands for it
        (`trace_plan`'s, worked out again when not given)."""
        uses = uses or {}
        outcomes, moved = decide_blame(outcomes, uses)
        healthy = dependencies_pass(outcomes, uses)
        if traces and shared is None:
            shared = self.trace_plan(outcomes, student, uses, sources)[1]
        evidence = (
            Evidence(traces or {}, sources or {}, healthy, self.findings, shared)
            if self.traced
            else Evidence({}, {}, healthy, self.findings)
        )
        untraced: list[int] = []  # left untraced as they rely on a broken section (`trace_plan`)
        for index, outcome in enumerate(outcomes):  # each replaced by its diagnosed self, in order
            if outcome.status == "passed" or outcome.blocked_by:
                continue
            named: list[str] = []
            pattern = self.pattern(outcome)
            if outcome.id in moved and outcome.module in BUILDERS:
                named.append("wrong-config")  # a builder's only task is the configuration
            if pattern:
                named.append(pattern)
            found = evidence.for_outcome(outcome, outcomes)
            named += found.misconceptions  # the student's own values say it
            variant = self.variant(outcome, student) if outcome.probes else None
            if variant and not found.misconceptions:
                named.append(variant)  # else a variant equal on few, small outputs is the weaker evidence
            if self.traced and self.departs_where_it_relies(outcome, outcomes, student, uses, sources):
                untraced.append(index)  # that section's own tests name the cause
            elif outcome.error is None and not named:
                named += signatures(outcome, student, self.reference)
                if (
                    outcome.module in BUILDERS
                    and healthy(outcome)
                    and configuration_differs(outcome, student, self.reference)
                ):
                    named.append("wrong-config")
            named = [m for m in dict.fromkeys(named) if m in CATALOGUE]
            location = found.location_of(named[0]) if named else found.location
            if (
                outcome.error is not None
                and location is not None
                and outcome.error.location is not None
                and (location.file, location.line) == (outcome.error.location.file, outcome.error.location.line)
            ):
                location = None  # the error message shows it already
            evidence_kind = (
                "error"
                if pattern or outcome.id in moved
                else "variant"
                if variant == (named[0] if named else None) and variant not in found.misconceptions
                else found.kind or "behaviour"
            )
            diagnosis = outcome.diagnosis
            if named or found.checkpoint or location:
                diagnosis = Diagnosis(
                    tuple(named),
                    found.checkpoint_of(named[0]) if named else found.checkpoint,
                    location,
                    evidence_kind if named else found.kind,
                )
            outcomes[index] = replace(outcome, misconception=named[0] if named else None, diagnosis=diagnosis)
        outcomes = consolidate(outcomes)
        for index in untraced:  # the line the tests it relies on found, in their own module
            relied = located_in_own_module(uses.get(outcomes[index].id, ()), outcomes)
            if outcomes[index].diagnosis is None and relied is not None:
                outcomes[index] = replace(outcomes[index], diagnosis=relied.diagnosis)
        return outcomes


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


# a cause that is a special case of another in the same module: a divisor that is sometimes 1
SPECIAL_CASES = {"missing-scaling": "wrong-scaling"}


def consolidate(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """One cause, one name: when a submission shows both a cause and its special case (a divisor that
    is a wrong size, which is 1 for some inputs), the special case is the general one."""
    named = {m for o in outcomes if o.diagnosis for m in o.diagnosis.misconceptions}
    return [_general(outcome, named) for outcome in outcomes]


def _general(outcome: TestOutcome, named: set[str]) -> TestOutcome:
    diagnosis = outcome.diagnosis
    if diagnosis is None:
        return outcome
    causes = list(
        dict.fromkeys(
            SPECIAL_CASES[m] if m in SPECIAL_CASES and SPECIAL_CASES[m] in named else m
            for m in diagnosis.misconceptions
        )
    )
    if causes == list(diagnosis.misconceptions):
        return outcome
    return replace(outcome, diagnosis=replace(diagnosis, misconceptions=tuple(causes)), misconception=causes[0])


__all__ = ["CATALOGUE", "Diagnoser", "Misconception", "frame"]
