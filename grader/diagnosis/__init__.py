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

from grader.diagnosis.catalogue.misconceptions import CATALOGUE, Misconception
from grader.diagnosis.consolidate import consolidate
from grader.diagnosis.diagnoser import Diagnoser
from grader.diagnosis.matching import MATCH_ATOL, same
from grader.diagnosis.source.quotes import frame
from grader.diagnosis.trace_plan import code_path, reference_ops

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
