"""Finding submissions on disk and reading them into `Submission` records.

Every entry point reads submissions through this module: `grade` (grader.run), nbgrader's
`GradeWithKit`, the Gradescope and PrairieLearn entry points and the student bundle's self-check.
It needs only the standard library and `grader.records`, so that the bundle can ship a copy.

The rules (see `grader.intake.files`): only regular files directly inside a student's folder are
read, never through a link (the student folder itself, a module file, a notebook), never a hard
link, a FIFO, a device or a folder posing as a module, never more than the size cap. Whatever is
refused becomes an integrity note naming the file, and costs only that file.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from grader.intake.files import Folder, Refused, read_file
from grader.intake.shown import decode_name, shown
from grader.intake.submission import (
    MAX_NOTEBOOK_BYTES,
    MAX_SOURCE_BYTES,
    Assembly,
    is_module_file,
    reading_order,
    submission_from_files,
)
from grader.records import IntegrityNote, Submission

__all__ = [
    "MAX_SOURCE_BYTES",
    "Candidate",
    "Discovery",
    "DiscoveryError",
    "discover",
    "find_submissions",
    "find_upload",
    "holds_submission",
    "notebook_submission",
    "read_candidate",
    "read_submission",
    "submission_from_files",
]
MAX_STUDENTS = 100_000  # entries of a class folder looked at
IGNORED_FOLDERS = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}


class DiscoveryError(Exception):
    """PATH holds no submission at all: the grader cannot run. Carries a message-catalogue key."""

    def __init__(self, key: str, **params: object):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Candidate:
    """A folder to grade: where it is, its name (as the OS lists it: a byte that is not UTF-8 as a
    surrogate escape; `grader.intake.names` shows it and names its report folder), and why it is
    refused as a whole (a student folder that is a link), if it is."""

    path: Path
    name: str
    refused: str = ""


@dataclass(frozen=True)
class Discovery:
    is_class: bool
    candidates: list[Candidate]


# -- what PATH holds ---------------------------------------------------------------------------------


def _holds(folder: Folder) -> bool:
    entries = folder.entries(keep=lambda name: not name.startswith("."))
    if any(is_module_file(e.name) for e in entries):
        return True
    if not any(e.name.endswith(".ipynb") for e in entries):
        return False
    for entry in entries:
        if entry.kind != "folder" or entry.name in IGNORED_FOLDERS:
            continue
        try:
            with folder.subfolder(entry.name) as child:
                if child.entries(limit=1, keep=lambda name: name.endswith((".py", ".ipynb"))):
                    return False  # a student folder beside the notebook: PATH is a class
        except (Refused, OSError):
            continue
    return True


def holds_submission(path: Path) -> bool:
    """Modules (.py or module-named notebooks) directly in PATH; or, failing that, a notebook in
    PATH (one for the whole chapter) and no student folders beside it. Links are not followed
    (PATH itself is)."""
    try:
        with Folder.open(Path(path), follow=True) as folder:
            return _holds(folder)
    except (Refused, OSError):
        return False


def discover(path: Path) -> Discovery:
    """One submission when PATH holds modules itself; otherwise every folder in PATH is one
    student's (a student "folder" that is a link to a folder is listed, refused as a whole)."""
    path = Path(path)
    if not path.exists():
        raise DiscoveryError("discovery.missing", path=shown(path))
    if not path.is_dir():
        raise DiscoveryError("discovery.not-a-directory", path=shown(path))
    try:
        root = Folder.open(path, follow=True)
    except Refused:
        raise DiscoveryError("discovery.missing", path=shown(path)) from None
    with root:
        if _holds(root):
            return Discovery(False, [Candidate(path, Path(os.path.abspath(path)).name or "submission")])
        found: dict[str, str] = {}
        for entry in root.entries(limit=MAX_STUDENTS, keep=lambda name: not name.startswith(".")):
            if entry.name in IGNORED_FOLDERS:
                continue
            if entry.kind == "folder":
                found[entry.name] = ""
            elif entry.kind == "link" and _links_to_folder(root, entry.name):
                found[entry.name] = "link"
    if not found:
        raise DiscoveryError("discovery.empty", path=shown(path))
    candidates = [Candidate(path / raw, raw, refused) for raw, refused in found.items()]
    return Discovery(True, sorted(candidates, key=lambda c: os.fsencode(c.path.name)))


def _links_to_folder(folder: Folder, name: str) -> bool:
    try:  # stat only: nothing behind the link is opened or read
        return stat.S_ISDIR(os.stat(name, dir_fd=folder.fd, follow_symlinks=True).st_mode)
    except (OSError, ValueError):
        return False


def find_submissions(path: Path) -> tuple[list[Path], bool]:
    """(submission folders, is_class). One submission when PATH holds modules itself."""
    found = discover(path)
    return [c.path for c in found.candidates], found.is_class


def find_upload(path: Path, depth: int = 4, folders: int = 200, *, follow_root: bool = True) -> Path | None:
    """The folder of an upload that holds the modules: the upload itself, or the first folder inside
    it that does (students often upload a zip with a folder in it), breadth first, never through a
    link (nor through PATH itself when it is a link, unless `follow_root`); None if there is none."""
    queue = deque([(Path(path), 0)])
    seen = 0
    while queue and seen < folders:
        folder_path, level = queue.popleft()
        seen += 1
        try:
            folder = Folder.open(folder_path, follow=follow_root and level == 0)
        except Refused:
            continue
        with folder:
            if _holds(folder):
                return folder_path
            if level < depth:
                queue.extend(
                    (folder_path / e.name, level + 1)
                    for e in folder.entries()
                    if e.kind == "folder" and not e.name.startswith(".") and e.name not in IGNORED_FOLDERS
                )
    return None


# -- reading one submission -------------------------------------------------------------------------


def read_submission(path: Path, name: str | None = None, *, follow: bool = False) -> Submission:
    """Sources of the seven modules in the folder PATH, from .py files or, where there is none,
    notebooks. PATH itself is not followed if it is a link (unless `follow`: a folder the
    instructor named): then the submission is empty, with a note saying why."""
    path = Path(path)
    shown_name = name or decode_name(path.name or str(path))
    try:
        folder = Folder.open(path, follow=follow)
    except Refused as exc:
        return submission_from_files(shown_name, path, {}, [_folder_note(exc.reason, path)])
    with folder:
        return _read_folder(folder, shown_name)


def read_candidate(candidate: Candidate, follow: bool = False) -> Submission:
    """A discovered folder as a Submission: never raises (a failure is the student's note)."""
    try:
        if candidate.refused:
            return submission_from_files(
                candidate.name, candidate.path, {}, [_folder_note(candidate.refused, candidate.path)]
            )
        submission = read_submission(candidate.path, candidate.name, follow=follow)
        if not submission.sources and not submission.problems:
            # students often hand in a folder inside their folder (an unzipped alice/ch3/): grade
            # the first folder in it that holds the modules, as the grading platforms do
            inner = find_upload(candidate.path, follow_root=follow)
            if inner is not None and inner != candidate.path:
                submission = read_submission(inner, candidate.name)
        return submission
    except Exception as exc:  # noqa: BLE001 - one student's files never stop the class
        return submission_from_files(
            candidate.name, candidate.path, {}, [IntegrityNote("submission.unreadable", shown(type(exc).__name__))]
        )


def notebook_submission(name: str, path: Path) -> Submission:
    """One notebook file as a whole submission (nbgrader's submitted copy of the assignment): read
    by the rules above; a refused file is the submission's note."""
    path = Path(path)
    try:
        files = {path.name: read_file(path, MAX_NOTEBOOK_BYTES)}
        problems: list[IntegrityNote] = []
    except Refused as exc:
        files, problems = {}, [_file_note(exc.reason, path.name, True)]
    return submission_from_files(name, path.parent, files, problems)


def _folder_note(reason: str, path: Path) -> IntegrityNote:
    return IntegrityNote(f"submission.folder-{reason}", decode_name(path.name or str(path)))


def _read_folder(folder: Folder, name: str) -> Submission:
    names = [e.name for e in folder.entries(keep=_worth_reading)]
    assembly = Assembly(name, folder.path)
    for filename in reading_order(names):
        notebook = filename.endswith(".ipynb")
        cap = MAX_NOTEBOOK_BYTES if notebook else MAX_SOURCE_BYTES
        try:  # (a file over its own cap is refused by the read, with its own note)
            if not assembly.admits(filename, min(folder.size(filename), cap)):
                continue
            assembly.add(filename, folder.read(filename, cap))
        except Refused as exc:
            assembly.problems.append(_file_note(exc.reason, filename, notebook))
    return assembly.submission()


def _worth_reading(name: str) -> bool:
    return not name.startswith(".") and (name.endswith(".ipynb") or is_module_file(name))


def _file_note(reason: str, filename: str, notebook: bool) -> IntegrityNote:
    if notebook and reason in ("too-large", "unreadable"):
        return IntegrityNote(f"submission.notebook-{reason}", decode_name(filename))
    return IntegrityNote(f"submission.file-{reason}", decode_name(filename))
