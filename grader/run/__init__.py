"""One grading run, the trusted side, top to bottom:

    grade(PATH)
      intake      discover PATH: one submission, or a class of them      grader.intake
      plan        names, report folders, what an earlier run graded        grader.run.plan
      sandbox     warm workers per track start (importing torch)          grader.sandbox.tracks
      grading     per submission, as its sandbox run comes back:          grader.run.grading
        outcomes    the hidden suites on its probe outputs                 grader.run.stages
        trace plan  failing probes run again under the tracer
        diagnoses   blame, misconceptions, the student's line
        result      messages, heatmaps, integrity notes, scores -> GradeResult
        reports     results.json, feedback.html, feedback.md               grader.report
      class       gradebook.csv, summary.html                              grader.report.writers

Nothing here imports torch: the sandbox's workers start (each importing torch, about two seconds)
while this process imports `grader.run.grading` on another core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.i18n import Catalog
from grader.intake.discovery import Candidate, Discovery, discover, read_candidate
from grader.records import GradeResult, IntegrityNote, Submission
from grader.run.plan import CACHE_DIR, CLASS_OUTPUTS, Loader, kit_fingerprint, plan_run
from grader.sandbox.runs import Limits
from grader.sandbox.tracks import TrackPools

__all__ = ["CACHE_DIR", "CLASS_OUTPUTS", "GraderError", "RunSummary", "grade", "grade_submissions"]

SLOTS_PER_TRACK = 8  # at most this many workers per track (a run has 16 sandbox uids)


class GraderError(Exception):
    """The grader itself could not run (not a problem of any submission)."""


@dataclass(frozen=True)
class RunSummary:
    results: list[GradeResult]
    is_class: bool
    out_dir: Path
    graded: int
    reused: int
    seconds: float
    protections: list[IntegrityNote] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the submissions' names as shown, in the order given
    out_of: dict[str, Path] = field(default_factory=dict)  # name as shown -> the folder of its reports

    @property
    def report_path(self) -> Path:
        return self.out_dir / ("summary.html" if self.is_class else "feedback.html")


def grade(
    path: Path,
    out_dir: Path,
    *,
    jobs: int | None = None,
    lang: str = "en",
    force: bool = False,
    limits: Limits = Limits(),
    on_progress: Callable[[int, int], None] | None = None,
    name: str | None = None,
    upload: bool = False,
) -> RunSummary:
    """Grade PATH (one submission, or a class folder of student folders) into OUT_DIR. `name` names a
    single submission in its reports (default: its folder's name). An `upload` (a grading platform's
    folder of one student's files) is one submission whatever it holds, never followed if a link."""
    path = Path(path)
    found = Discovery(False, [Candidate(path, name or path.name, upload=True)]) if upload else discover(path)

    def loader(candidate: Candidate) -> Loader:
        def load(near_misses: bool = True) -> Submission:
            # the folder the instructor named is followed if it is a link; a student folder never is,
            # nor a platform's upload
            follow = not found.is_class and not upload
            submission = read_candidate(candidate, follow=follow, near_misses=near_misses)
            return replace(submission, name=name) if name and not found.is_class else submission

        return load

    return run_grading(
        [loader(c) for c in found.candidates],
        Path(out_dir),
        found.is_class,
        jobs,
        lang,
        force,
        limits,
        on_progress,
        [_folder_of(Path(path)), Path(out_dir).resolve()],
    )


def _folder_of(path: Path) -> Path:
    """The folder the sandbox must not show student code: PATH, or the folder of a zip PATH."""
    resolved = path.resolve()
    return resolved if resolved.is_dir() else resolved.parent


def grade_submissions(
    submissions: list[Submission],
    out_dir: Path,
    *,
    is_class: bool = True,
    jobs: int | None = None,
    lang: str = "en",
    force: bool = False,
    limits: Limits = Limits(),
    on_progress: Callable[[int, int], None] | None = None,
    hide: list[Path] | None = None,
) -> RunSummary:
    """Grade submissions already read (by grader.intake) into OUT_DIR: for a class one folder per
    student (`grader.intake.names.folder_names`: the student's own name when it is safe as it is,
    else a safe form with a digest of the name; never a class output's) plus gradebook.csv and
    summary.html; a single submission straight into OUT_DIR. `hide` lists folders the sandbox must
    not show student code (default: the submissions' parent folders and OUT_DIR)."""
    if hide is None:
        hide = sorted({Path(s.path).resolve().parent for s in submissions} | {Path(out_dir).resolve()})
    return run_grading(
        [_given(s) for s in submissions], Path(out_dir), is_class, jobs, lang, force, limits, on_progress, hide
    )


def _given(submission: Submission) -> Loader:
    """The loader of a submission already read."""

    def load(near_misses: bool = True) -> Submission:
        return submission

    return load


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under taskset), not the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_grading(
    loaders: list[Loader],
    out_dir: Path,
    is_class: bool,
    jobs: int | None,
    lang: str,
    force: bool,
    limits: Limits,
    on_progress: Callable[[int, int], None] | None,
    hide: list[Path],
) -> RunSummary:
    started = time.perf_counter()
    catalog = Catalog(lang)
    plan = plan_run(loaders, out_dir, is_class, kit_fingerprint(lang, limits), force)
    results: list[GradeResult] = list(plan.reused)
    progress = _guarded(on_progress or (lambda done, count: None))
    progress(len(results), len(loaders))
    protections: list[IntegrityNote] = []
    if plan.to_grade:
        # the workers start at once (a track's only if the class has submissions of it); this
        # process imports torch, the suites and the answer key meanwhile
        workers = plan.workers(min(jobs or os.cpu_count() or 1, SLOTS_PER_TRACK), usable_cores())
        with TrackPools(workers, limits, hide=hide, submissions=plan.per_track()) as pools:
            protections = pools.protections()
            from grader.run.grading import Grading  # torch: once the workers are starting

            def on_result(result: GradeResult) -> None:
                results.append(result)
                progress(len(results), len(loaders))

            Grading(plan, pools, out_dir / CACHE_DIR, catalog, protections, on_result).run()
    if is_class:
        from grader.report.writers import write_class_reports  # jinja2: not before the workers start

        write_class_reports(results, out_dir, catalog)
    return RunSummary(
        results,
        is_class,
        out_dir,
        len(plan.to_grade),
        len(plan.reused),
        time.perf_counter() - started,
        protections,
        list(plan.names),
        dict(plan.folders),
    )


def _guarded(callback: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """A progress callback whose failure (a terminal gone away) does not stop the grading."""

    def call(done: int, count: int) -> None:
        try:
            callback(done, count)
        except Exception:  # noqa: BLE001
            pass

    return call
