"""One grading run: submissions -> sandbox -> hidden suites -> scores -> diagnosis -> reports.

This module decides what to grade (new or changed submissions) and runs the sandbox; the trusted
grading itself is `grader.session`. Nothing here imports torch: the sandbox's workers start (each
importing torch, about two seconds) while this process imports the session on another core.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import grader
from grader.intake.discovery import find_submissions, read_submission
from grader.i18n import TEMPLATES_DIR, Catalog
from grader.records import GradeResult, IntegrityNote, Submission, TestOutcome
from grader.sandbox.pool import Limits, SandboxPool

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
    digest = hashlib.sha256(f"{lang}\0{limits!r}\0{importlib.metadata.version('torch')}".encode())
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
                       [IntegrityNote(**n) for n in document.get("integrity", [])],
                       track=str(document.get("track", "pytorch")))


def grade(path: Path, out_dir: Path, *, jobs: int | None = None, lang: str = "en", force: bool = False,
          limits: Limits = Limits(), on_progress: Callable[[int, int], None] | None = None) -> RunSummary:
    started = time.perf_counter()
    catalog = Catalog(lang)
    dirs, is_class = find_submissions(path)
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
    if submissions:
        # the workers start at once; this process imports torch and the suites meanwhile
        workers = min(jobs or os.cpu_count() or 1, len(submissions))
        with SandboxPool(workers, limits, hide=[path.resolve(), out_dir.resolve()]) as pool:
            protections = pool.protections()
            from grader import session

            probes = session.probe_names()
            for submission in submissions:
                pool.submit(submission, probes)

            def on_result(result: GradeResult) -> None:
                results.append(result)
                progress(len(results), total_count)

            try:
                session.grade_with_suites(pool, out_of, out_dir / CACHE_DIR, fingerprint, catalog, protections,
                                          on_result)
            except session.SuitesCannotRun as exc:
                raise GraderError(f"the hidden suites could not run (pytest exit code {exc})") from None
    if is_class:
        from grader.report import write_class_reports

        write_class_reports(results, out_dir, catalog)
    return RunSummary(results, is_class, out_dir, len(submissions), len(reused),
                      time.perf_counter() - started, protections)
