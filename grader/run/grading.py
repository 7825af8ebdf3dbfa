"""Grading the planned submissions as their sandbox runs come back (the trusted side of a run).

Everything heavy lives here (torch, the hidden suites, the answer key, the report templates):
`grader.run` imports this module only once the sandbox's workers are starting, so that the two
start-ups overlap on different cores.

A submission goes to the sandbox once to run every probe (its grade job); when its tests fail,
the failing probes run once more under the tracer (its trace job) in the child that ran them,
parked meanwhile (`SandboxPool.submit(follow=True)`). `Grading` holds the state between runs:
the submissions not yet submitted, the graded ones waiting for their trace, and the traced runs
not yet finished. A traced run is finished when no run waits to be graded, since a grade run's
slot waits, its child parked, until its trace plan is known; at most one traced run per worker
waits to be finished.
"""

from __future__ import annotations

import gc
import logging
from collections import deque
from collections.abc import Callable
from pathlib import Path

import torch

from grader.answer_key import KIT_CACHE, AnswerKey
from grader.diagnosis import Diagnoser
from grader.diagnosis.trace.documents import documents_of
from grader.fingerprint import code_fingerprint
from grader.frameworks import PYTORCH
from grader.i18n import Catalog, section_key
from grader.intake.printable import printable
from grader.probes import load_all
from grader.records import SECTIONS, GradeResult, IntegrityNote
from grader.report.writers import write_submission_reports
from grader.run import GraderError, stages
from grader.run.plan import Plan, Planned
from grader.sandbox.runs import SandboxRun
from grader.sandbox.tracks import TrackPools
from grader.suites.hidden_suites import SuitesCannotRun, collect

log = logging.getLogger("grader.run")
FREEZE_FROM = 8  # submissions from which the long-lived objects are frozen out of the collector's view
# Then, how many more container objects may be alive than at the last collection of the youngest
# ones before the next (Python's default: 700). A submission's grading keeps thousands of objects
# alive for a while (parsed code, outcomes, report pieces, diagnoses); at the default the collector
# walked them again and again: 1.5 ms of CPU per correct submission and 5 ms per buggy one (150
# correct and 100 buggy submissions of benchmarks/corpus.py), 0.3 ms and 2 ms at 20,000. Garbage in
# reference cycles waits longer to be freed, so the grading makes none that holds a submission's
# outputs (grader.suites.compare.expect_cases); peak memory is the same (100 buggy submissions:
# 365-367 MB; 40 submissions whose every output is 1 MB of the wrong shape: 318-324 MB).
YOUNG_OBJECTS = 20_000


class Grading:
    def __init__(
        self,
        plan: Plan,
        pools: TrackPools,
        cache_dir: Path,
        catalog: Catalog,
        protections: list[IntegrityNote],
        on_result: Callable[[GradeResult], None],
    ):
        self.plan, self.pools, self.catalog, self.protections = plan, pools, catalog, protections
        self.on_result = on_result
        self.titles = {s: catalog.t(section_key(s)) for s in SECTIONS}
        self.probes = sorted(load_all())
        self.to_submit: deque[Planned] = deque(plan.to_grade)
        # the first submissions go to the sandbox at once: their probes run while this process
        # collects the suites and reads the answer key
        for _ in range(min(len(self.to_submit), 2 * self.pools.jobs)):
            self.submit_next()
        try:
            self.suites = collect()
        except SuitesCannotRun as exc:
            raise GraderError(f"the hidden suites could not run ({exc})") from None
        # the kit's own cache (where the build of a platform's image put it, or an earlier run),
        # else the output folder's
        self.answer_key = AnswerKey([KIT_CACHE, cache_dir], code_fingerprint())
        self.diagnosers: dict[str, Diagnoser] = {}
        self.awaiting_trace: dict[int, tuple[stages.Graded, stages.TracePlan]] = {}  # trace job -> its grade run
        self.traced: deque[SandboxRun] = deque()  # trace runs back from the sandbox, not yet finished

    def run(self) -> None:
        """Grade every planned submission; each result goes to `on_result` once its reports are written."""
        threads = torch.get_num_threads()
        thresholds = gc.get_threshold()
        frozen = False
        # the workers are busy with the submissions while this process computes the answer key;
        # one thread here, so that it does not fight the workers for the cores
        torch.set_num_threads(1)
        try:
            self.answer_key.reference(PYTORCH)
            # a caller's own frozen objects stay frozen: the run freezes only when nothing is
            if len(self.plan.to_grade) >= FREEZE_FROM and gc.get_freeze_count() == 0:
                # what lives for the whole run (torch, pytest, the answer key) leaves the cyclic
                # collector's view: its collections were about a tenth of this process's CPU time,
                # walking it again and again (refcounting still frees what is frozen); for a few
                # submissions the collection that comes first costs more than it saves
                gc.collect()
                gc.freeze()
                frozen = True
                gc.set_threshold(YOUNG_OBJECTS, *thresholds[1:])
            for run in self.pools.results():
                if run.mode == "trace":
                    self.traced.append(run)
                else:
                    self.graded(run)
                while self.traced and (not self.pools.ready() or len(self.traced) > self.pools.jobs):
                    self.finish_traced(self.traced.popleft())
            while self.traced:
                self.finish_traced(self.traced.popleft())
        finally:
            if frozen:
                gc.unfreeze()
                gc.set_threshold(*thresholds)
            torch.set_num_threads(threads)

    def submit_next(self) -> None:
        if self.to_submit:
            planned = self.to_submit.popleft()
            # read again: graded as it is now; its failed probes are traced next in the child
            # that ran them (stages.trace_plan)
            self.pools.submit(self.plan.load(planned), self.probes, follow=True)

    def graded(self, run: SandboxRun) -> None:
        """A grade run: the suites' outcomes, then its trace job, or its result at once. Whatever
        fails for one submission here ends that submission only (`give_up`), never the class's run."""
        if run.not_run is not None:  # the sandbox could not take it (TrackPools.submit)
            self.give_up(run, run.not_run.note, run.not_run.key)
            return
        stage = "results"
        try:
            outputs = stages.probe_outputs(run)
            stage = "suites"
            graded = stages.outcomes(run, outputs, self.suites, self.answer_key.reference(run.track))
            stage = "grading"
            plan = stages.trace_plan(graded, self.diagnoser(run.track), self.suites)
            # the trace job gets what the grade job left of the submission's time: a submission whose
            # code sleeps until its tests fail never takes twice `Limits.submission_seconds`
            left = self.pools.limits.submission_seconds - run.seconds
            if plan.probes and left >= 1:
                self.awaiting_trace[self.pools.follow_up(run, list(plan.probes), mode="trace", seconds=left)] = (
                    graded,
                    plan,
                )
                self.submit_next()
                return
        except Exception as exc:  # noqa: BLE001
            self.give_up(run, _failure(stage, run, exc))
            return
        self.pools.release(run)
        self.finish(graded, stages.TracePlan(shared={}), {})
        self.submit_next()

    def finish_traced(self, run: SandboxRun) -> None:
        graded, plan = self.awaiting_trace.pop(run.job)
        try:
            traces = documents_of(run.results, run.digests)
        except Exception as exc:  # noqa: BLE001
            self.on_result(self.with_reports(self.failed(graded.run, _failure("diagnosis", graded.run, exc))))
            return
        self.finish(graded, plan, traces)

    def finish(self, graded: stages.Graded, plan: stages.TracePlan, traces: dict[str, dict]) -> None:
        """One submission's result and reports."""
        run = graded.run
        try:
            outcomes, partial = stages.with_diagnoses(graded, self.diagnoser(run.track), self.suites, traces, plan)
            result = stages.grade_result(
                graded,
                outcomes,
                partial,
                self.suites,
                self.answer_key.reference(run.track),
                self.catalog,
                self.titles,
                self.protections,
            )
        except Exception as exc:  # noqa: BLE001
            result = self.failed(run, _failure("grading", run, exc))
        self.on_result(self.with_reports(result))

    def give_up(self, run: SandboxRun, note: IntegrityNote, key: str = "internal.grading-failed") -> None:
        """The submission of a grade run as a failed result (every test an error saying `key`, with
        `note`); its slot released and the next submission submitted."""
        self.pools.release(run)
        self.on_result(self.with_reports(self.failed(run, note, key)))
        self.submit_next()

    def failed(self, run: SandboxRun, note: IntegrityNote, key: str = "internal.grading-failed") -> GradeResult:
        return stages.failed_result(
            run.submission, self.suites, self.catalog, self.titles, self.protections, note, run.track, key
        )

    def with_reports(self, result: GradeResult) -> GradeResult:
        """The result, naming its report folder, once its reports are written (with a note when they
        could not be)."""
        result = self.plan.with_folder(result)
        try:
            return write_submission_reports(result, self.plan.folders[result.submission], self.catalog)
        except Exception as exc:
            log.exception("the reports of %s could not be written", printable(result.submission))
            return stages.with_note(result, IntegrityNote("report.failed", type(exc).__name__))

    def diagnoser(self, track: str) -> Diagnoser:
        if track not in self.diagnosers:
            self.diagnosers[track] = Diagnoser(
                self.answer_key.reference(track), self.answer_key.variants, traced=track == PYTORCH
            )
        return self.diagnosers[track]


def _failure(stage: str, run: SandboxRun, exc: Exception) -> IntegrityNote:
    log.exception("%s failed for %s", stage, printable(run.submission.name))
    return IntegrityNote("grader.failed", f"{stage}: {type(exc).__name__}")
