"""What a run grades: every submission's name, output folder and cache key, and which of them an
earlier run already graded as they are now (their results are reused, `--force` aside).

Submissions are read twice: once here to name them and decide what to (re)grade (their sources then
dropped; their code is not parsed for misspelt names), once when a sandbox slot is about to take
them (`Plan.load`). At most a few submissions' sources are held at a time, however many students
and whatever their files hold.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from grader.fingerprint import code_fingerprint, tree_digest
from grader.frameworks import MINDSPORE, PYTORCH
from grader.i18n import TEMPLATES_DIR
from grader.intake.names import display_names, folder_names
from grader.lms import NAMES
from grader.records import GradeResult, Submission
from grader.report.results_file import read_results
from grader.sandbox.runs import Limits
from grader.sandbox.tracks import planned_track

CACHE_DIR = ".grader-cache"  # in the output folder: the answer key's outputs where the kit's own cache cannot take them
# What a class run writes at the top of its output folder: no student's folder may take these names.
# (`grade export` writes its LMS gradebooks there too, by default.)
CLASS_OUTPUTS = {
    "gradebook.csv",
    "summary.html",
    CACHE_DIR,
    "results.json",
    "feedback.html",
    "feedback.md",
    *(f"{lms}-grades.csv" for lms in NAMES),
}


class Loader(Protocol):
    """Reads one submission as it is now. The plan's first look passes `near_misses=False`: it needs
    the submission's name, content and track, not its misspelt names (which take parsing its code)."""

    def __call__(self, near_misses: bool = True) -> Submission: ...


# Submissions per worker for a worker beyond the free cores to pay off (`Plan.workers`). Measured on
# 2 cores, `grade CLASS --jobs 1` against `--jobs 2`, wall clock, median of 3 runs (2 for MindSpore):
# - PyTorch (the mixed corpus of benchmarks/corpus.py): 3 submissions 1.62 s with one worker, 1.95 s
#   with two; 16: 2.45 / 2.80 s; 32: 3.39 / 3.42 s; 48: 4.46 / 4.00 s; 100: 9.75 / 8.43 s. The
#   second worker cost 0.9-2.3 s of CPU more at every size.
# - MindSpore (examples/mindspore-class): 8 submissions 5.7 / 6.2 s; 16: 9.9 / 8.9 s.
SUBMISSIONS_PER_WORKER = {PYTORCH: 32, MINDSPORE: 12}


@dataclass(frozen=True)
class Planned:
    """One submission as the run sees it before grading it."""

    index: int  # its place among the run's loaders
    name: str  # as shown: unique, printable, no two alike (grader.intake.names): how its reports name it
    folder: Path  # where its reports go
    key: str  # its content hash with the kit's fingerprint: an unchanged result is reused by it
    content_hash: str  # of its files as first read
    track: str


@dataclass(frozen=True)
class Plan:
    loaders: tuple[Loader, ...]
    to_grade: tuple[Planned, ...]  # in the order given
    reused: tuple[GradeResult, ...]  # results of an earlier run, for exactly these files and kit
    names: tuple[str, ...]  # every submission's, as shown, in the order given
    folders: dict[str, Path]  # name -> the folder of its reports
    fingerprint: str
    class_folders: dict[str, str] = field(default_factory=dict)  # name -> its report folder's name (a class)

    def with_folder(self, result: GradeResult) -> GradeResult:
        """RESULT naming the folder of its reports (results.json's `folder`; none for one submission)."""
        return replace(result, folder=self.class_folders.get(result.submission))

    def workers(self, jobs: int, cores: int) -> dict[str, int]:
        """Warm workers per track: at most `jobs`, and none without a submission to grade. As many
        as `cores` less one (the trusted process's) whatever the class's size: each starts on a core
        of its own. A worker beyond those competes with the others for a core while it imports
        its framework, and starts only for a class large enough to win that back
        (`SUBMISSIONS_PER_WORKER`)."""
        free = max(1, cores - 1)
        return {
            track: min(jobs, count, max(free, -(-count // SUBMISSIONS_PER_WORKER[track])))
            for track, count in self.per_track().items()
        }

    def per_track(self) -> dict[str, int]:
        """Submissions to grade per track."""
        return dict(Counter(planned.track for planned in self.to_grade))

    def load(self, planned: Planned) -> Submission:
        """The submission read again, as it is now, named and keyed for grading."""
        submission = self.loaders[planned.index]()
        key = (
            planned.key
            if submission.content_hash == planned.content_hash
            else cache_key(submission.content_hash, self.fingerprint)
        )
        return replace(submission, name=planned.name, content_hash=key)


def plan_run(loaders: list[Loader], out_dir: Path, is_class: bool, fingerprint: str, force: bool) -> Plan:
    """Names (grader.intake.names: each student's folder name as shown, look-alikes told apart) and
    report folders (a class: the student's own name when it is safe as it is, else its safe form
    and a digest of it, whoever else is in the class) of every submission; what to grade."""
    heads = []
    for load in loaders:
        submission = load(near_misses=False)
        heads.append((submission.name, submission.content_hash, planned_track(submission.sources)))
    raw = distinct_names([name for name, _, _ in heads])
    shown = display_names(raw)
    names = [shown[r] for r in raw]
    by_raw = folder_names(raw, CLASS_OUTPUTS) if is_class else {}
    class_folders = {shown[r]: folder for r, folder in by_raw.items()}
    folders = {name: out_dir / class_folders[name] if is_class else out_dir for name in names}
    to_grade: list[Planned] = []
    reused: list[GradeResult] = []
    for index, (name, (_, content_hash, track)) in enumerate(zip(names, heads, strict=True)):
        key = cache_key(content_hash, fingerprint)
        previous = None if force else reusable(folders[name], key, name, class_folders.get(name))
        if previous is not None:
            reused.append(previous)
        else:
            to_grade.append(Planned(index, name, folders[name], key, content_hash, track))
    return Plan(tuple(loaders), tuple(to_grade), tuple(reused), tuple(names), folders, fingerprint, class_folders)


def reusable(folder: Path, key: str, name: str, folder_name: str | None = None) -> GradeResult | None:
    """A previous result for exactly this content, kit and student (their name and report folder),
    if its reports are complete."""
    result = read_results(folder)
    if (
        result is None
        or result.content_hash != key
        or result.submission != name
        or result.folder != folder_name
        or not (folder / "feedback.html").is_file()
    ):
        return None
    return result


def cache_key(content_hash: str, fingerprint: str) -> str:
    return hashlib.sha256((content_hash + fingerprint).encode()).hexdigest()


def distinct_names(raw: list[str]) -> list[str]:
    """The submissions' names, in the order given, a number added to a name given twice (never by
    a class folder: two submissions handed to `grade_submissions` under one name) or empty."""
    seen = set(raw)
    used: set[str] = set()
    distinct: list[str] = []
    for name in raw:
        if not name or name in used:
            base, n = name or "submission", 2
            while f"{base} ({n})" in seen:
                n += 1
            name = f"{base} ({n})"
            seen.add(name)
        used.add(name)
        distinct.append(name)
    return distinct


def kit_fingerprint(lang: str, limits: Limits = Limits()) -> str:
    """Changes whenever anything that decides a grade or a report changes: all of the grader's code,
    the templates and catalogues, the solutions, the language, the sandbox's limits and the versions
    of torch and MindSpore."""
    digest = hashlib.sha256(f"{lang}\0{limits!r}\0{code_fingerprint()}".encode())
    digest.update(tree_digest(TEMPLATES_DIR))
    return digest.hexdigest()[:16]
