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
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import grader
from grader.intake.discovery import Candidate, discover, read_candidate
from grader.intake.text import MAX_NAME_CHARS, folder_names, shown
from grader.i18n import TEMPLATES_DIR, Catalog
from grader.records import GradeResult, IntegrityNote, SectionScore, Submission, TestOutcome
from grader.sandbox.pool import Limits
from grader.sandbox.pools import TrackPools, planned_track

SLOTS_PER_TRACK = 8  # at most this many workers per track (a run has 16 sandbox uids)
CACHE_DIR = ".grader-cache"  # in the output folder: reference and variant outputs, per kit fingerprint
# What a class run writes at the top of its output folder: no student's folder may take these names.
# (`grade export` writes its LMS gradebooks there too, by default.)
CLASS_OUTPUTS = {"gradebook.csv", "summary.html", CACHE_DIR, "results.json", "feedback.html", "feedback.md",
                 "canvas-grades.csv", "moodle-grades.csv"}


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
    names: list[str] = field(default_factory=list)  # the submissions' names as graded, in the order given
    out_of: dict[str, Path] = field(default_factory=dict)  # name -> the folder of its reports

    @property
    def report_path(self) -> Path:
        return self.out_dir / ("summary.html" if self.is_class else "feedback.html")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def kit_fingerprint(lang: str, limits: Limits = Limits()) -> str:
    """Changes whenever anything that decides a grade or a report changes: all of the grader's code,
    the templates and catalogues, the solutions, the language, the sandbox's limits and the versions
    of torch and MindSpore."""
    digest = hashlib.sha256(f"{lang}\0{limits!r}\0{importlib.metadata.version('torch')}\0{_version('mindspore')}".encode())
    roots = [Path(grader.__file__).parent, TEMPLATES_DIR]
    import solutions

    roots.append(Path(solutions.__file__).parent)
    for root in roots:
        for file in sorted(root.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
                digest.update(str(file.relative_to(root)).encode() + file.read_bytes())
    return digest.hexdigest()[:16]


def _cached(out_dir: Path, content_hash: str, name: str) -> GradeResult | None:
    """A previous result for exactly this content, kit and student, if its reports are complete.
    Anything unexpected in the old results.json means there is none."""
    try:
        document = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
        if document.get("content_hash") != content_hash or document.get("submission") != name \
                or not (out_dir / "feedback.html").is_file():
            return None
        tests = [TestOutcome(id=t["id"], module=t["id"].split("::")[0], name=t["id"].split("::")[-1],
                             section=t["section"], status=t["status"], points=float(t["points"]),
                             max_points=float(t["max_points"]), message=str(t.get("message", "")),
                             misconception=t.get("misconception"), blocked_by=t.get("blocked_by"))
                 for t in document["tests"]]
        return GradeResult(name, content_hash, float(document["score"]), float(document["max_score"]),
                           [SectionScore(str(s["id"]), str(s["title"]), float(s["score"]), float(s["max_score"]))
                            for s in document["sections"]], tests,
                           [IntegrityNote(str(n["kind"]), str(n["detail"])) for n in document.get("integrity", [])],
                           track=str(document.get("track", "pytorch")))
    except Exception:  # noqa: BLE001 - a damaged or foreign results.json: grade again
        return None


def grade(path: Path, out_dir: Path, *, jobs: int | None = None, lang: str = "en", force: bool = False,
          limits: Limits = Limits(), on_progress: Callable[[int, int], None] | None = None,
          name: str | None = None) -> RunSummary:
    """Grade PATH (one submission, or a class folder of student folders) into OUT_DIR. `name` names a
    single submission in its reports (default: its folder's name)."""
    found = discover(path)

    def loader(candidate: Candidate) -> Loader:
        def load() -> Submission:
            # the folder the instructor named is followed if it is a link; a student folder never is
            submission = read_candidate(candidate, follow=not found.is_class)
            return replace(submission, name=name) if name and not found.is_class else submission
        return load

    return _grade([loader(c) for c in found.candidates], Path(out_dir), found.is_class, jobs, lang, force, limits,
                  on_progress, [Path(path).resolve(), Path(out_dir).resolve()])


def grade_submissions(submissions: list[Submission], out_dir: Path, *, is_class: bool = True,
                      jobs: int | None = None, lang: str = "en", force: bool = False, limits: Limits = Limits(),
                      on_progress: Callable[[int, int], None] | None = None,
                      hide: list[Path] | None = None) -> RunSummary:
    """Grade submissions already read (by grader.intake) into OUT_DIR: for a class one folder per
    student (a safe name that never collides with the class outputs) plus gradebook.csv and
    summary.html; a single submission straight into OUT_DIR. `hide` lists folders the sandbox must
    not show student code (default: the submissions' parent folders and OUT_DIR)."""
    if hide is None:
        hide = sorted({Path(s.path).resolve().parent for s in submissions} | {Path(out_dir).resolve()})
    return _grade([lambda s=s: s for s in submissions], Path(out_dir), is_class, jobs, lang, force, limits,
                  on_progress, hide)


Loader = Callable[[], Submission]


def _grade(loaders: list[Loader], out_dir: Path, is_class: bool, jobs: int | None, lang: str, force: bool,
           limits: Limits, on_progress: Callable[[int, int], None] | None, hide: list[Path]) -> RunSummary:
    """Submissions are read twice: once to name them and decide what to (re)grade (their sources
    then dropped), once when a sandbox slot is about to take them. At most a few submissions' sources
    are held at a time, however many students and whatever their files hold."""
    started = time.perf_counter()
    catalog = Catalog(lang)
    fingerprint = kit_fingerprint(lang, limits)
    heads = []
    for load in loaders:
        submission = load()
        heads.append((submission.name, submission.content_hash, planned_track(submission.sources)))
    names = _unique_names([name for name, _, _ in heads])
    folders = folder_names(names, CLASS_OUTPUTS) if is_class else {}
    pending: list[tuple[int, str]] = []  # (index, cache key)
    reused: list[GradeResult] = []
    out_of: dict[str, Path] = {}
    for index, (name, (_, content_hash, _)) in enumerate(zip(names, heads)):
        key = _key(content_hash, fingerprint)
        out_of[name] = out_dir / folders[name] if is_class else out_dir
        previous = None if force else _cached(out_of[name], key, name)
        if previous is not None:
            reused.append(previous)
        else:
            pending.append((index, key))
    total_count = len(loaders)
    progress = _guarded(on_progress or (lambda done, count: None))
    progress(len(reused), total_count)

    results: list[GradeResult] = list(reused)
    protections: list[IntegrityNote] = []
    if pending:
        # the workers start at once (a track's only if the class has submissions of it); this
        # process imports torch and the suites meanwhile
        jobs = min(jobs or os.cpu_count() or 1, SLOTS_PER_TRACK)
        per_track = Counter(heads[index][2] for index, _ in pending)
        workers = {track: min(jobs, count) for track, count in per_track.items()}
        with TrackPools(workers, limits, hide=hide) as pool:
            protections = pool.protections()
            from grader import session

            probes = session.probe_names()
            queue = list(reversed(pending))

            def submit_next() -> None:
                index, key = queue.pop()
                submission = loaders[index]()  # read again: graded as it is now
                if submission.content_hash != heads[index][1]:
                    key = _key(submission.content_hash, fingerprint)
                # its failed probes are traced next in the child that ran them (Diagnoser.trace_plan)
                pool.submit(replace(submission, name=names[index], content_hash=key), probes, follow=True)

            for _ in range(min(len(queue), 2 * sum(workers.values()))):
                submit_next()

            def on_result(result: GradeResult) -> None:
                results.append(result)
                progress(len(results), total_count)

            def on_released() -> None:  # a grade job's result was read: the pool can take the next one
                if queue:
                    submit_next()

            try:
                session.grade_with_suites(pool, out_of, out_dir / CACHE_DIR, fingerprint, catalog, protections,
                                          on_result, on_released)
            except session.SuitesCannotRun as exc:
                raise GraderError(f"the hidden suites could not run (pytest exit code {exc})") from None
    if is_class:
        from grader.report import write_class_reports

        write_class_reports(results, out_dir, catalog)
    return RunSummary(results, is_class, out_dir, len(pending), len(reused),
                      time.perf_counter() - started, protections, names, out_of)


def _key(content_hash: str, fingerprint: str) -> str:
    return hashlib.sha256((content_hash + fingerprint).encode()).hexdigest()


def _unique_names(raw: list[str]) -> list[str]:
    """Printable, unique names (a suffix " (2)" where two are alike), in the order given."""
    seen: set[str] = set()
    unique = []
    for name in raw:
        base = shown(name, limit=MAX_NAME_CHARS) or "submission"
        candidate, n = base, 1
        while candidate in seen:
            n += 1
            candidate = f"{base} ({n})"
        seen.add(candidate)
        unique.append(candidate)
    return unique


def _guarded(callback: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """A progress callback whose failure (a terminal gone away) does not stop the grading."""
    def call(done: int, count: int) -> None:
        try:
            callback(done, count)
        except Exception:  # noqa: BLE001
            pass
    return call
