"""One grading run: submissions -> sandbox -> hidden suites -> scores -> diagnosis -> reports."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import torch

import grader
from grader.diagnosis import Diagnoser, variant_runs
from grader.discovery import find_submissions, read_submission
from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.plugin import GradingPlugin, SuiteItem, pytest_args
from grader.probes import PROBES, load_all
from grader.records import Detail, GradeResult, Heatmap, IntegrityNote, ProbeError, Submission, TestOutcome
from grader.report import outcome_message, write_class_reports, write_submission_reports
from grader.sandbox.pool import Limits, SandboxPool, SandboxRun
from grader.scoring import section_scores, total
from grader.seam import Seam, reference_results
from grader.probes import BOOK_TOKENS

KIT_DIRS = ("probes", "suites", "sandbox", "diagnosis")


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


def kit_fingerprint(lang: str) -> str:
    """Changes whenever anything that decides a grade or a report changes."""
    digest = hashlib.sha256(lang.encode())
    roots = [Path(grader.__file__).parent / d for d in KIT_DIRS] + [TEMPLATES_DIR]
    import solutions

    roots.append(Path(solutions.__file__).parent)
    for root in roots:
        for file in sorted(root.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
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
    return [[round(float(v), 4) for v in row] for row in t.double()]


def grade(path: Path, out_dir: Path, *, jobs: int | None = None, lang: str = "en", force: bool = False,
          limits: Limits = Limits(), on_progress: Callable[[int, int], None] | None = None) -> RunSummary:
    started = time.perf_counter()
    catalog = Catalog(lang)
    dirs, is_class = find_submissions(path)
    load_all()
    fingerprint = kit_fingerprint(lang)
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
    if submissions:
        reference = Seam(reference_results())
        diagnoser = Diagnoser(reference, variant_runs())
        titles = {s: catalog.t(section_key(s)) for s in ("3.3", "3.4", "3.5", "3.6", "ex3.1", "ex3.2", "ex3.3")}
        with SandboxPool(jobs or os.cpu_count() or 1, limits, hide=[path.resolve(), out_dir.resolve()],
                         probes=sorted(PROBES)) as pool:
            protections = pool.protections()
            for submission in submissions:
                pool.submit(submission)

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
            if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                raise GraderError(f"the hidden suites could not run (pytest exit code {int(code)})")
    if is_class:
        write_class_reports(results, out_dir, catalog)
    return RunSummary(results, is_class, out_dir, len(submissions), len(reused),
                      time.perf_counter() - started, protections)


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
        outcome.message = outcome_message(outcome, catalog)
    score, max_score = total(outcomes)
    return GradeResult(submission.name, submission.content_hash, score, max_score,
                       section_scores(outcomes, titles), outcomes, integrity,
                       heatmaps=_heatmaps(infos, reference, seam))
