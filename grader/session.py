"""The trusted grading session: the hidden suites run on each submission's sandbox results, then
diagnosis, scores and reports.

Everything heavy lives here (torch, pytest and the suites, the reference and variant outputs, the
report templates): `grader.runner` imports this module only once the sandbox's workers are starting,
so that the two start-ups overlap on different cores.
"""
from __future__ import annotations

import gc
import logging
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from grader.diagnosis import Diagnoser, VariantRun, variant_runs
from grader.diagnosis.blame import attribute_to_earlier_sections
from grader.diagnosis.traces import documents_of
from grader.diagnosis.variants import all_variants
from grader.i18n import Catalog, section_key
from grader.intake.cells import in_notebook_terms, message_in_notebook_terms
from grader.intake.text import shown
from grader.suites.plugin import GradingPlugin, SuiteItem, run_suites
from grader.probes import BOOK_TOKENS, load_all
from grader.records import SECTIONS, Diagnosis, GradeResult, Heatmap, IntegrityNote, ProbeError, Submission, TestOutcome
from grader.report import outcome_message, write_submission_reports
from grader.report.text import words
from grader.sandbox import codec
from grader.sandbox.pool import SandboxRun, result_from_record
from grader.sandbox.pools import TrackPools
from grader.scoring import section_scores, total
from grader.suites.seam import Seam, reference_results
from grader.suites import cache as baseline_cache
from grader.suites.tracks import TrackBaselines

log = logging.getLogger("grader.session")


class SuitesCannotRun(Exception):
    """pytest could not run the hidden suites (its exit code)."""


class GuardedPlugin(GradingPlugin):
    """The suites' plugin, with each test's run guarded: whatever one submission's results provoke
    in a hidden test or in pytest's machinery is that test's `error`, never the session's end; and
    whatever else fails for a submission in the loop (its reference, say) is that submission's
    (`guard(submission, stage, step, *args)`)."""

    def __init__(self, *args: Any, guard: Callable[..., Any], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.guard = guard

    def grade(self, submission: Any, seam: Seam) -> None:
        self.guard(submission, "suites", super().grade, submission, seam)
        self.current = None

    def _run(self, item: pytest.Item, info: SuiteItem, seam: Seam, direct: dict | None = None) -> TestOutcome:
        try:
            return super()._run(item, info, seam, direct)
        except Exception as exc:  # noqa: BLE001
            log.exception("hidden test %s failed outside its own checks", info.id)
            return _internal_outcome(info, "internal.suite-error", {"type": type(exc).__name__, "text": _said(exc)})


def _said(exc: BaseException) -> str:
    try:
        return str(exc)[:300]
    except Exception:  # noqa: BLE001
        return type(exc).__name__


def _internal_outcome(info: SuiteItem, key: str, params: dict | None = None) -> TestOutcome:
    return TestOutcome(id=info.id, module=info.module, name=info.name, section=info.section, status="error",
                       points=0.0, max_points=info.max_points,
                       error=ProbeError(kind="internal", key=key, params=params or {}))


def probe_names() -> list[str]:
    return sorted(load_all())


def grade_with_suites(pool: TrackPools, out_of: dict[str, Path], cache_dir: Path, fingerprint: str,
                      catalog: Catalog, protections: list[IntegrityNote],
                      on_result: Callable[[GradeResult], None],
                      on_released: Callable[[], None] = lambda: None) -> None:
    """Grade the submissions submitted to `pool`: one pytest session runs the hidden suites on each
    sandbox result as it arrives, and each result's reports are written at once (to `out_of[name]`).
    The reference's and the variants' outputs are cached in `cache_dir`, per kit `fingerprint`.
    `on_released()` is called once per submission when its grade job's result has been read (the
    pool may take another submission, while this one's trace job, if any, is still to come)."""
    titles = {s: catalog.t(section_key(s)) for s in SECTIONS}
    threads = torch.get_num_threads()
    # the workers are busy with the submissions while this process computes the baselines;
    # one thread here, so that it does not fight the workers for the cores
    torch.set_num_threads(1)
    try:
        reference, runs = _baselines(fingerprint, cache_dir)
        tracks = TrackBaselines(reference, runs, cache_dir, fingerprint)
        # what lives for the whole run (torch, pytest, the baselines) leaves the cyclic collector's
        # view: its collections were about a tenth of this process's CPU time, walking it again
        # and again (refcounting still frees what is frozen; unfrozen when the run ends)
        gc.collect()
        gc.freeze()

        # trace job -> its submission, and the probes that share a traced one's trace (Diagnoser.trace_plan)
        waiting: dict[int, tuple[SandboxRun, Seam, list[TestOutcome], dict[str, str]]] = {}
        # (grade job, "released" | "handed on" | "graded"): what is done for each submission, once
        done: set[tuple[int, str]] = set()

        def once(run: SandboxRun, what: str, action: Callable[..., None], *args: Any) -> None:
            if (run.job, what) not in done:
                done.add((run.job, what))
                action(*args)

        def guarded(run: SandboxRun, stage: str, step: Callable[..., Any], *args: Any) -> Any:
            """`step(*args)` for the submission of `run` (its grade job): whatever it raises ends that
            submission only (`give_up`), never the class's run."""
            try:
                return step(*args)
            except Exception as exc:  # noqa: BLE001
                log.exception("%s failed for %s", stage, shown(run.submission.name))
                give_up(run, IntegrityNote("grader.failed", f"{stage}: {type(exc).__name__}"))
                return None

        def give_up(run: SandboxRun, note: IntegrityNote, key: str = "internal.grading-failed") -> None:
            """The submission as a failed result (every test an error saying `key`, with `note`),
            unless it has its result already; its slot released and the pool handed on, once."""
            once(run, "released", pool.release, run)
            if (run.job, "graded") not in done:
                deliver(run, _failed_result(run.submission, plugin.infos, catalog, titles, protections, note, key))
            once(run, "handed on", on_released)

        def source():
            # Traced runs are finished (diagnosis, reports) when no run waits: a grade run's slot
            # waits, its child parked, until `sink` says what follows (SandboxPool.submit(follow=True)),
            # so its suites go first. At most one traced run per worker waits to be finished.
            traced: list[SandboxRun] = []
            for run in pool.results():
                if run.not_run is not None:  # the sandbox could not take it (TrackPools.submit)
                    give_up(run, run.not_run.note, run.not_run.key)
                elif run.mode == "trace":  # the second pass of a submission whose tests failed
                    traced.append(run)
                elif (seam := guarded(run, "results", _seam_of, run)) is not None:
                    yield run, seam
                while traced and (not pool.ready() or len(traced) > pool.jobs):
                    finish_traced(traced.pop(0))
            for run in traced:
                finish_traced(run)

        def finish_traced(run: SandboxRun) -> None:
            submission_run, seam, outcomes, shared = waiting.pop(run.job)
            guarded(submission_run, "diagnosis", lambda: finish(
                submission_run, seam, outcomes, documents_of(run.results, run.digests), shared))

        def sink(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome]) -> None:
            """The probes that failed go back to the sandbox, traced; the rest is `finish`'s."""
            try:
                uses = {info.id: info.uses for info in plugin.infos}
                probes, shared = tracks.diagnoser(run.track).trace_plan(outcomes, seam, uses,
                                                                        run.submission.sources) \
                    if run.submission.sources else ([], {})
            except Exception:  # noqa: BLE001
                log.exception("choosing the probes to trace for %s failed", shown(run.submission.name))
                probes, shared = [], {}
            # the trace job gets what the grade job left of the submission's time: a submission
            # whose code sleeps until its tests fail never takes twice `Limits.submission_seconds`
            left = pool.limits.submission_seconds - run.seconds
            if probes and left >= 1:
                job = pool.follow_up(run, probes, mode="trace", seconds=left)
                done.add((run.job, "released"))
                waiting[job] = (run, seam, outcomes, shared)
            else:
                once(run, "released", pool.release, run)
                finish(run, seam, outcomes, {}, {})
            once(run, "handed on", on_released)

        def finish(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome], traces: dict[str, dict],
                   shared: dict[str, str]) -> None:
            """One submission's result and reports."""
            deliver(run, _grade_result(run, seam, outcomes, plugin.infos, tracks.reference(run.track),
                                       tracks.diagnoser(run.track), catalog, titles, protections, traces, shared))

        def deliver(run: SandboxRun, result: GradeResult) -> None:
            if (run.job, "graded") in done:
                return  # a submission given up on keeps that result
            done.add((run.job, "graded"))
            result.track = run.track
            try:
                result = write_submission_reports(result, out_of[run.submission.name], catalog)
            except Exception as exc:  # noqa: BLE001 - e.g. the disk is full: the class still gets its gradebook
                log.exception("the reports of %s could not be written", shown(run.submission.name))
                result.integrity.append(IntegrityNote("report.failed", type(exc).__name__))
            on_result(result)

        def guarded_sink(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome]) -> None:
            guarded(run, "grading", sink, run, seam, outcomes)

        plugin = GuardedPlugin(reference, source(), guarded_sink,
                               reference_of=lambda run: tracks.reference(run.track), guard=guarded)
        code = run_suites(plugin)
    finally:
        gc.unfreeze()
        torch.set_num_threads(threads)
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SuitesCannotRun(int(code))


def _record(result: Any) -> dict:
    if isinstance(result, ProbeError):
        error = asdict(result)
        error["frames"] = [asdict(frame) for frame in result.frames]
        error["params"] = {k: v if type(v) in (bool, int, float, str) else str(v) for k, v in result.params.items()}
        return {"error": error}
    return {"ok": result}


def _baselines(fingerprint: str, cache_dir: Path | None) -> tuple[Seam, list[VariantRun]]:
    """The reference's and the variants' outputs: computed once per kit version, then read back
    (with the sandbox's pickle-free codec) from the output folder's cache."""
    cache = cache_dir / f"baselines-{fingerprint}.bin" if cache_dir is not None else None
    variants = all_variants()
    cached = baseline_cache.read(cache)
    if cached is not None:
        try:
            document = codec.decode(cached)
            reference = {name: result_from_record(r) for name, r in document["reference"].items()}
            runs = [VariantRun(variant, {name: result_from_record(r) for name, r in results.items()})
                    for variant, results in zip(variants, document["variants"], strict=True)]
            return Seam(reference), runs
        except (codec.CodecError, KeyError, TypeError, ValueError, AttributeError):
            pass
    reference = reference_results()
    runs = variant_runs()
    if cache is not None:
        document = {"reference": {name: _record(r) for name, r in reference.items()},
                    "variants": [{name: _record(r) for name, r in run.results.items()} for run in runs]}
        try:
            data = codec.encode(document)
        except codec.CodecError:
            return Seam(reference), runs
        baseline_cache.write(cache, data, "baselines-[!m]*.bin")  # not the MindSpore track's
    return Seam(reference), runs


def _heatmaps(infos: list[SuiteItem], reference: Seam, student: Seam) -> list[Heatmap]:
    maps = []
    for info in infos:
        if info.heatmap is None:
            continue
        probe, key = info.heatmap
        expected = (reference.outputs(probe) or {}).get(key)
        actual = (student.outputs(probe) or {}).get(key)
        if type(expected) is not torch.Tensor:
            continue
        expected2d = _first_matrix(expected)
        actual2d = _first_matrix(actual) if type(actual) is torch.Tensor else None
        if actual2d is not None and actual2d.shape != expected2d.shape:
            actual2d = None
        maps.append(Heatmap(info.id, f"tests.{info.id}.title", BOOK_TOKENS[: expected2d.shape[-1]],
                            _rounded(expected2d), _rounded(actual2d) if actual2d is not None else None))
    return maps


def _first_matrix(t: torch.Tensor) -> torch.Tensor:
    while t.dim() > 2:
        t = t[0]
    return t


def _rounded(t: torch.Tensor) -> list[list[float]]:
    return [[round(v, 4) for v in row] for row in t.double().tolist()]


def _seam_of(run: SandboxRun) -> Seam:
    run.results = _screened(run.results)
    return Seam(run.results)


def _screened(results: dict[str, Any]) -> dict[str, Any]:
    """A child's errors never speak as the grader: an error that claims to be the grader's own
    (kind or key "internal") is a rejected result."""
    screened = {}
    for name, result in results.items():
        if isinstance(result, ProbeError) and (result.kind == "internal" or str(result.key).startswith("internal.")):
            result = ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": "internal"})
        screened[name] = result
    return screened


def diagnosis_in_notebook_terms(diagnosis: Diagnosis | None, submission: Submission) -> Diagnosis | None:
    """A diagnosis's line in a module made from a notebook, as the cell and its line."""
    if diagnosis is None or diagnosis.location is None or not submission.origins:
        return diagnosis
    return replace(diagnosis, location=in_notebook_terms(diagnosis.location, submission.origins))


def _in_notebook_terms(error: ProbeError | None, submission: Submission) -> ProbeError | None:
    """Frames (and a syntax error's "file, line") of modules made from notebooks, as cells."""
    if error is None or not submission.origins:
        return error
    frames = tuple(in_notebook_terms(frame, submission.origins) for frame in error.frames)
    return replace(error, frames=frames, message=message_in_notebook_terms(str(error.message), submission.origins))


def _grade_result(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome], infos: list[SuiteItem],
                  reference: Seam, diagnoser: Diagnoser, catalog: Catalog, titles: dict[str, str],
                  protections: list[IntegrityNote], traces: dict[str, dict] | None = None,
                  shared: dict[str, str] | None = None) -> GradeResult:
    submission = run.submission
    integrity = list(protections) + list(submission.problems)
    for name, result in run.results.items():
        if isinstance(result, ProbeError) and result.kind == "integrity":
            integrity.append(IntegrityNote("result.rejected", name))
    partial: list[str] = []  # stages that failed without costing points (their part of the report is left out)
    for outcome in outcomes:
        if outcome.status != "passed" and outcome.module not in submission.sources and outcome.error is not None:
            outcome.error = ProbeError(kind="import", key="import.missing", module=outcome.module,
                                       params={"module": outcome.module})
            outcome.blocked_by = None
    try:  # blame and diagnosis read the sandbox's own file names; the notebook's cells come after
        diagnoser.diagnose_submission(outcomes, seam, {info.id: info.uses for info in infos}, submission.sources,
                                      traces, shared)
    except Exception:  # noqa: BLE001
        log.exception("diagnosis of %s failed", shown(submission.name))
        for outcome in outcomes:
            outcome.misconception, outcome.diagnosis = None, None
        partial.append("diagnosis")
    attribute_to_earlier_sections(outcomes, {info.id: info.uses for info in infos})  # on the modules' own file names
    for outcome in outcomes:
        outcome.error = _in_notebook_terms(outcome.error, submission)
        outcome.diagnosis = diagnosis_in_notebook_terms(outcome.diagnosis, submission)
    for outcome in outcomes:
        try:
            outcome.message = outcome_message(outcome, catalog)
        except Exception:  # noqa: BLE001
            log.exception("the message of %s for %s failed", outcome.id, shown(submission.name))
            outcome.message = words(catalog.t(f"status.{outcome.status}"))
            partial.append("messages")
    try:
        heatmaps = _heatmaps(infos, reference, seam)
    except Exception:  # noqa: BLE001
        log.exception("the heatmaps of %s failed", shown(submission.name))
        heatmaps, partial = [], partial + ["heatmaps"]
    for stage in dict.fromkeys(partial):
        integrity.append(IntegrityNote("grader.partial", stage))
    score, max_score = total(outcomes)
    return GradeResult(submission.name, submission.content_hash, score, max_score,
                       section_scores(outcomes, titles), outcomes, integrity, heatmaps=heatmaps)


def _failed_result(submission: Submission, infos: list[SuiteItem], catalog: Catalog, titles: dict[str, str],
                   protections: list[IntegrityNote], note: IntegrityNote,
                   key: str = "internal.grading-failed") -> GradeResult:
    """A submission the grader could not grade: every test an error (0 points) saying `key`, and `note`."""
    outcomes = [_internal_outcome(info, key) for info in infos]
    for outcome in outcomes:
        outcome.message = words(catalog.t(key))
    integrity = list(protections) + list(submission.problems) + [note]
    score, max_score = total(outcomes)
    return GradeResult(submission.name, submission.content_hash, score, max_score,
                       section_scores(outcomes, titles), outcomes, integrity)
