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

import weakref
from collections.abc import Mapping
from typing import Any

from grader.diagnosis import submission_diagnosis, trace_plan
from grader.diagnosis.catalogue.misconceptions import CATALOGUE, Misconception
from grader.diagnosis.catalogue.patterns import all_patterns
from grader.diagnosis.catalogue.variants import VariantRun
from grader.diagnosis.consolidate import consolidate
from grader.diagnosis.evidence import Findings
from grader.diagnosis.matching import MATCH_ATOL, same
from grader.diagnosis.source.quotes import frame
from grader.diagnosis.trace_plan import code_path, reference_ops
from grader.probe_outputs import ProbeOutputs
from grader.records import TestOutcome


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
        self._variants: weakref.WeakKeyDictionary[ProbeOutputs, dict[tuple, VariantRun | None]] = (
            weakref.WeakKeyDictionary()
        )
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
        run = self.variant_run(outcome, student)
        return run.variant.id if run is not None else None

    def variant_run(self, outcome: TestOutcome, student: ProbeOutputs) -> VariantRun | None:
        """`variant`'s run: which modules the variant changes, too."""
        known = self._variants.setdefault(student, {})
        key = (outcome.id, outcome.probes)
        if key not in known:
            known[key] = self._variant(outcome, student)
        return known[key]

    def _variant(self, outcome: TestOutcome, student: ProbeOutputs) -> VariantRun | None:
        for run, relevant in self._unlike_reference(outcome.probes):
            if all(same(student.results.get(name), run.results[name]) for name in relevant):
                return run
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
        """The probes worth tracing, and the probes that share one of theirs (probe -> the traced
        one): see `grader.diagnosis.trace_plan.trace_plan`."""
        return trace_plan.trace_plan(self, outcomes, student, uses, sources)

    def departs_where_it_relies(
        self,
        outcome: TestOutcome,
        outcomes: list[TestOutcome],
        student: ProbeOutputs,
        uses: Mapping[str, tuple[str, ...]],
        sources: Mapping[str, str] | None,
    ) -> bool:
        """Whether the test's run reaches the mistake of an earlier section it relies on before
        anything of its own: see `grader.diagnosis.trace_plan.departs_where_it_relies`."""
        return trace_plan.departs_where_it_relies(self, outcome, outcomes, student, uses, sources)

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
        the outcomes anew (`grader.diagnosis.submission_diagnosis`). `traces`: probe -> the tracer's document
        (untrusted; see grader.diagnosis.trace.documents); `shared`: probe -> the traced probe whose
        trace stands for it (`trace_plan`'s, worked out again when not given)."""
        return submission_diagnosis.diagnose_submission(self, outcomes, student, uses, sources, traces, shared)


__all__ = [
    "CATALOGUE",
    "MATCH_ATOL",
    "Diagnoser",
    "Misconception",
    "code_path",
    "consolidate",
    "frame",
    "reference_ops",
    "same",
]
