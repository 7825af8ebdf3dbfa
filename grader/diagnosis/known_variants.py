"""Which known-buggy variant of the reference a student's outputs equal, on the probes a test used,
where the variant behaves unlike the reference: worked out once per test of a submission, and
forgotten with the submission's outputs."""

from __future__ import annotations

import weakref

from grader.diagnosis.catalogue.variants import VariantRun
from grader.diagnosis.matching import same
from grader.probe_outputs import ProbeOutputs
from grader.records import TestOutcome


class KnownVariants:
    def __init__(self, reference: ProbeOutputs, runs: list[VariantRun]):
        self.reference = reference
        self.runs = runs
        self._differs: dict[tuple[int, tuple[str, ...]], bool] = {}  # (run, probes) -> unlike the reference
        self._candidates: dict[tuple[str, ...], list[tuple[VariantRun, tuple[str, ...]]]] = {}  # `_unlike_reference`
        self._known: weakref.WeakKeyDictionary[ProbeOutputs, dict[tuple, VariantRun | None]] = (
            weakref.WeakKeyDictionary()
        )

    def run_for(self, outcome: TestOutcome, student: ProbeOutputs) -> VariantRun | None:
        """The run of the variant whose outputs the student's equal on the test's probes, where it
        differs from the reference (its id, and which modules it changes)."""
        known = self._known.setdefault(student, {})
        key = (outcome.id, outcome.probes)
        if key not in known:
            known[key] = self._first_equal(outcome, student)
        return known[key]

    def _first_equal(self, outcome: TestOutcome, student: ProbeOutputs) -> VariantRun | None:
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

    def _differs_from_reference(self, index: int, relevant: tuple[str, ...]) -> bool:
        """Whether variant `index` behaves unlike the reference on these probes (the same for every student)."""
        key = (index, relevant)
        if key not in self._differs:
            results = self.runs[index].results
            self._differs[key] = any(not same(results[name], self.reference.results.get(name)) for name in relevant)
        return self._differs[key]
