"""One grading run: submissions -> sandbox -> hidden suites -> scores -> diagnosis -> reports."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

import grader
from grader.diagnosis import Diagnoser, VariantRun, variant_runs
from grader.diagnosis.variants import all_variants
from grader.discovery import find_submissions, read_submission
from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.plugin import GradingPlugin, SuiteItem, pytest_args
from grader.probes import PROBES, load_all
from grader.records import GradeResult, Heatmap, IntegrityNote, ProbeError, Submission, TestOutcome
from grader.report import outcome_message, write_class_reports, write_submission_reports
from grader.sandbox import codec
from grader.sandbox.pool import Limits, SandboxPool, SandboxRun, error_from_dict
from grader.scoring import section_scores, total
from grader.seam import Seam, reference_results
from grader.probes import BOOK_TOKENS

CACHE_DIR = ".grader-cache"  # in the output folder: reference and variant outputs, per kit fingerprint


class GraderError(Exception):
    """The grader itself could not run (not a problem of any submission)."""


@dataclass
class RunSummary:
    results: list[GradeResult]
    is_class: bool
    out_dir: Path
    graded: int
    reused: int
    seconds: float
    protections: list[IntegrityNote] = field(default_factory=list)

    @property
    def report_path(self) -> Path:
        return self.out_dir / ("summary.html" if self.is_class else "feedback.html")


def kit_fingerprint(lang: str, limits: Limits = Limits()) -> str:
    """Changes whenever anything that decides a grade or a report changes: all of the grader's code,
    the templates and catalogues, the solutions, the language and the sandbox's limits."""
    digest = hashlib.sha256(f"{lang}\0{limits!r}\0{torch.__version__}".encode())
    roots = [Path(grader.__file__).parent, TEMPLATES_DIR]
    import solutions

    roots.append(Path(solutions.__file__).parent)
    for root in roots:
        for file in sorted(root.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
                digest.update(str(file.relative_to(root)).encode() + file.read_bytes())
    return digest.hexdigest()[:16]


def _cached(out_dir: Path, content_hash: str) -> GradeResult | None:
    """A previous result for exactly this content and kit, if its reports are complete."""
    try:
        document = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if document.get("content_hash") != content_hash or not (out_dir / "feedback.html").exists():
        return None
    from grader.records import SectionScore

    tests = [TestOutcome(id=t["id"], module=t["id"].split("::")[0], name=t["id"].split("::")[-1],
                         section=t["section"], status=t["status"], points=t["points"], max_points=t["max_points"],
                         message=t.get("message", ""), misconception=t.get("misconception"),
                         blocked_by=t.get("blocked_by"))
             for t in document["tests"]]
    return GradeResult(document["submission"], content_hash, document["score"], document["max_score"],
                       [SectionScore(**s) for s in document["sections"]], tests,
                       [IntegrityNote(**n) for n in document.get("integrity", [])])


def _record(result: Any) -> dict:
    if isinstance(result, ProbeError):
        error = asdict(result)
        error["frames"] = [asdict(frame) for frame in result.frames]
        error["params"] = {k: v if type(v) in (bool, int, float, str) else str(v) for k, v in result.params.items()}
        return {"error": error}
    return {"ok": result}


def _from_record(record: dict) -> Any:
    return record["ok"] if "ok" in record else error_from_dict(record["error"])


def _baselines(fingerprint: str, cache_dir: Path | None) -> tuple[Seam, list[VariantRun]]:
    """The reference's and the variants' outputs: computed once per kit version, then read back
    (with the sandbox's pickle-free codec) from the output folder's cache."""
    cache = cache_dir / f"baselines-{fingerprint}.bin" if cache_dir is not None else None
    variants = all_variants()
    if cache is not None and cache.exists():
        try:
            document = codec.decode(cache.read_bytes())
            reference = {name: _from_record(r) for name, r in document["reference"].items()}
            runs = [VariantRun(variant, {name: _from_record(r) for name, r in results.items()})
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


def grade(path: Path, out_dir: Path, *, jobs: int | None = None, lang: str = "en", force: bool = False,
          limits: Limits = Limits(), on_progress: Callable[[int, int], None] | None = None) -> RunSummary:
    started = time.perf_counter()
    catalog = Catalog(lang)
    dirs, is_class = find_submissions(path)
    load_all()
    fingerprint = kit_fingerprint(lang, limits)
    submissions: list[Submission] = []
    reused: list[GradeResult] = []
    out_of: dict[str, Path] = {}
    for directory in dirs:
        submission = read_submission(directory)
        key = hashlib.sha256((submission.content_hash + fingerprint).encode()).hexdigest()
        submission = Submission(submission.name, submission.path, submission.sources, key, submission.problems)
        target = out_dir / submission.name if is_class else out_dir
        out_of[submission.name] = target
        previous = None if force else _cached(target, key)
        if previous is not None:
            reused.append(previous)
        else:
            submissions.append(submission)
    total_count = len(dirs)
    progress = on_progress or (lambda done, count: None)
    progress(len(reused), total_count)

    results: list[GradeResult] = list(reused)
    protections: list[IntegrityNote] = []
    threads = torch.get_num_threads()
    if submissions:
        titles = {s: catalog.t(section_key(s)) for s in ("3.3", "3.4", "3.5", "3.6", "ex3.1", "ex3.2", "ex3.3")}
        with SandboxPool(jobs or os.cpu_count() or 1, limits, hide=[path.resolve(), out_dir.resolve()],
                         probes=sorted(PROBES)) as pool:
            protections = pool.protections()
            for submission in submissions:
                pool.submit(submission)
            # the workers are busy with the submissions while this process computes the baselines;
            # one thread here, so that it does not fight the workers for the cores
            torch.set_num_threads(1)
            reference, runs = _baselines(fingerprint, out_dir / CACHE_DIR)
            diagnoser = Diagnoser(reference, runs)

            def source():
                for run in pool.results():
                    yield run, Seam(run.results)

            def sink(run: SandboxRun, seam: Seam, outcomes: list[TestOutcome]) -> None:
                result = _grade_result(run, seam, outcomes, plugin.infos, reference, diagnoser, catalog,
                                       titles, protections)
                write_submission_reports(result, out_of[result.submission], catalog)
                results.append(result)
                progress(len(results), total_count)

            plugin = GradingPlugin(reference, source(), sink)
            previous_autoload = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            try:
                code = pytest.main(pytest_args(), plugins=[plugin])
            finally:
                if previous_autoload is None:
                    os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
                torch.set_num_threads(threads)
            if code == pytest.ExitCode.INTERRUPTED:
                raise KeyboardInterrupt
            if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                raise GraderError(f"the hidden suites could not run (pytest exit code {int(code)})")
    if is_class:
        write_class_reports(results, out_dir, catalog)
    return RunSummary(results, is_class, out_dir, len(submissions), len(reused),
                      time.perf_counter() - started, protections)


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
    integrity = list(protections) + list(submission.problems) + list(run.integrity)
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
