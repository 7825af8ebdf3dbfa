"""The trusted grading session: the hidden suites run on each submission's sandbox results, then
diagnosis, scores and reports.

Everything heavy lives here (torch, pytest and the suites, the reference and variant outputs, the
report templates): `grader.runner` imports this module only once the sandbox's workers are starting,
so that the two start-ups overlap on different cores.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

from grader.diagnosis import Diagnoser, VariantRun, variant_runs
from grader.diagnosis.variants import all_variants
from grader.i18n import Catalog, section_key
from grader.suites.plugin import GradingPlugin, SuiteItem, run_suites
from grader.probes import BOOK_TOKENS, load_all
from grader.records import SECTIONS, GradeResult, Heatmap, IntegrityNote, ProbeError, TestOutcome
from grader.report import outcome_message, write_submission_reports
from grader.sandbox import codec
from grader.sandbox.pool import SandboxPool, SandboxRun, result_from_record
from grader.scoring import section_scores, total
from grader.suites.seam import Seam, reference_results
from grader.suites.tracks import TrackBaselines
from grader.frameworks import track_of

class SuitesCannotRun(Exception):
    """pytest could not run the hidden suites (its exit code)."""


def probe_names() -> list[str]:
    return sorted(load_all())


def grade_with_suites(pool: SandboxPool, out_of: dict[str, Path], cache_dir: Path, fingerprint: str,
                      catalog: Catalog, protections: list[IntegrityNote],
                      on_result: Callable[[GradeResult], None]) -> None:
    """Grade the submissions submitted to `pool`: one pytest session runs the hidden suites on each
    sandbox result as it arrives, and each result's reports are written at once (to `out_of[name]`).
    The reference's and the variants' outputs are cached in `cache_dir`, per kit `fingerprint`."""
    titles = {s: catalog.t(section_key(s)) for s in SECTIONS}
    threads = torch.get_num_threads()
    # the workers are busy with the submissions while this process computes the baselines;
    # one thread here, so that it does not fight the workers for the cores
    torch.set_num_threads(1)
    try:
        reference, runs = _baselines(fingerprint, cache_dir)
        tracks = TrackBaselines(reference, runs, cache_dir, fingerprint)

        def source():
            for run in pool.results():
                yield run, Seam(run.results)

        def sink(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome]) -> None:
            track = track_of(run.submission.sources)
            result = _grade_result(run, seam, outcomes, plugin.infos, tracks.reference(track),
                                   tracks.diagnoser(track), catalog, titles, protections)
            result.track = track
            write_submission_reports(result, out_of[result.submission], catalog)
            on_result(result)

        plugin = GradingPlugin(reference, source(), sink,
                               reference_of=lambda run: tracks.reference(track_of(run.submission.sources)))
        code = run_suites(plugin)
    finally:
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
    if cache is not None and cache.exists():
        try:
            document = codec.decode(cache.read_bytes())
            reference = {name: result_from_record(r) for name, r in document["reference"].items()}
            runs = [VariantRun(variant, {name: result_from_record(r) for name, r in results.items()})
                    for variant, results in zip(variants, document["variants"], strict=True)]
            return Seam(reference), runs
        except (codec.CodecError, KeyError, TypeError, ValueError):
            pass
    reference = reference_results()
    runs = variant_runs()
    if cache is not None:
        document = {"reference": {name: _record(r) for name, r in reference.items()},
                    "variants": [{name: _record(r) for name, r in run.results.items()} for run in runs]}
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            temporary = cache.with_name(f".{cache.name}.{os.getpid()}")
            temporary.write_bytes(codec.encode(document))
            os.replace(temporary, cache)
            for old in cache.parent.glob("baselines-*.bin"):
                if old != cache:
                    old.unlink(missing_ok=True)  # only the current kit's baselines are kept
        except (OSError, codec.CodecError):
            pass
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


def _attribute_to_earlier_sections(outcomes: list[TestOutcome], infos: list[SuiteItem]) -> None:
    """A failure with no diagnosis of its own, in a test that also runs code of an earlier section
    that fails its own tests, is blamed on that section ("blocked by")."""
    status = {o.id: o.status for o in outcomes}
    uses = {info.id: info.uses for info in infos}
    for outcome in outcomes:
        if outcome.status == "passed" or outcome.misconception or outcome.blocked_by:
            continue
        broken = [test_id for test_id in uses.get(outcome.id, ()) if status.get(test_id, "passed") != "passed"]
        if broken:
            outcome.blocked_by = broken[0].split("::")[0]


def _grade_result(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome], infos: list[SuiteItem],
                  reference: Seam, diagnoser: Diagnoser, catalog: Catalog, titles: dict[str, str],
                  protections: list[IntegrityNote]) -> GradeResult:
    submission = run.submission
    integrity = list(protections) + list(submission.problems)
    for name, result in run.results.items():
        if isinstance(result, ProbeError) and result.kind == "integrity":
            integrity.append(IntegrityNote("result.rejected", name))
    for outcome in outcomes:
        if outcome.status != "passed" and outcome.module not in submission.sources and outcome.error is not None:
            outcome.error = ProbeError(kind="import", key="import.missing", module=outcome.module,
                                       params={"module": outcome.module})
            outcome.blocked_by = None
        outcome.misconception = diagnoser.diagnose(outcome, seam)
    _attribute_to_earlier_sections(outcomes, infos)
    for outcome in outcomes:
        outcome.message = outcome_message(outcome, catalog)
    score, max_score = total(outcomes)
    return GradeResult(submission.name, submission.content_hash, score, max_score,
                       section_scores(outcomes, titles), outcomes, integrity,
                       heatmaps=_heatmaps(infos, reference, seam))
