"""Finding submissions on disk and reading them into `Submission` records.

Every entry point reads submissions through this module: `grade` (grader.run), nbgrader's
`GradeWithKit`, the Gradescope and PrairieLearn entry points and the student bundle's self-check.
It needs only the standard library and `grader.records`, so that the bundle can ship a copy.

PATH is a folder or a zip (`grader.intake.archives`), holding one submission, a class of student
folders, or an LMS's bulk download (`grader.intake.lms`: Canvas, Moodle, Blackboard Learn, Brightspace),
each student's files read by the same rules (`grader.intake.uploads`). The rules (see
`grader.intake.files`): only regular files directly inside a student's folder are read, never
through a link (the student folder itself, a module file, a notebook), never a hard link, a FIFO,
a device or a folder posing as a module, never more than the size cap. Whatever is refused becomes
an integrity note naming the file, and costs only that file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader.intake.archives import ZIP_SUFFIX, opened
from grader.intake.files import Folder, Refused, read_below
from grader.intake.lms import Student, bulk_download
from grader.intake.printable import decode_name, printable
from grader.intake.submission import (
    MAX_NOTEBOOK_BYTES,
    MAX_SOURCE_BYTES,
    Assembly,
    is_module_file,
    submission_from_files,
)
from grader.intake.uploads import (
    IGNORED_FOLDERS,
    Level,
    RenamedFolder,
    ZipFolder,
    descend,
    file_note,
    holds,
    read_level,
    read_upload,
    upload_level,
    upload_places,
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
    "holds_upload",
    "holds_submission",
    "notebook_submission",
    "read_candidate",
    "read_submission",
    "submission_from_files",
]
MAX_STUDENTS = 100_000  # entries of a class folder looked at
MAX_PEEK_BYTES = 64 * 1024  # an LMS's own file read to recognise its download (larger: not read)


class DiscoveryError(Exception):
    """PATH holds no submission at all: the grader cannot run. Carries a message-catalogue key."""

    def __init__(self, key: str, **params: object):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Candidate:
    """A submission to grade: where it is, its name (as the OS or the LMS lists it: a byte that is
    not UTF-8 as a surrogate escape; `grader.intake.names` shows it and names its report folder),
    and why it is refused as a whole (a student folder that is a link), if it is. In a zip
    (`archive`), `parts` is its folder there; in an LMS download, `student` says which folders or
    files of the download's top level are the student's. An `upload` (Gradescope's, PrairieLearn's)
    is one student's submission, whatever it holds: never a class, never an LMS download."""

    path: Path
    name: str
    refused: str = ""
    archive: Path | None = None
    parts: tuple[str, ...] = ()
    student: Student | None = field(default=None, compare=False)
    upload: bool = False  # one student's upload to a grading platform, whatever its names look like


@dataclass(frozen=True)
class Discovery:
    is_class: bool
    candidates: list[Candidate]


# -- what PATH holds ---------------------------------------------------------------------------------


def holds_submission(path: Path) -> bool:
    """Modules (.py or module-named notebooks) directly in PATH; or, failing that, a notebook in
    PATH (one for the whole chapter) and no student folders beside it. Links are not followed
    (PATH itself is)."""
    try:
        with Folder.open(Path(path), follow=True) as folder:
            return holds(folder)
    except (Refused, OSError):
        return False


def _visible(folder: Level) -> list:
    return [
        e for e in folder.entries(limit=MAX_STUDENTS) if not e.name.startswith(".") and e.name not in IGNORED_FOLDERS
    ]


def discover(path: Path) -> Discovery:
    """One submission when PATH holds modules itself; an LMS's bulk download (one submission per
    student); a zip (read the same way); otherwise every folder in PATH is one student's (a student
    "folder" that is a link to a folder is listed, refused as a whole)."""
    path = Path(path)
    if not path.exists():
        raise DiscoveryError("discovery.missing", path=printable(path))
    if path.is_file() and path.name.lower().endswith(ZIP_SUFFIX):
        return _discover_zip(path)
    if not path.is_dir():
        raise DiscoveryError("discovery.not-a-directory", path=printable(path))
    try:
        root = Folder.open(path, follow=True)
    except Refused:
        raise DiscoveryError("discovery.missing", path=printable(path)) from None
    with root:
        visible = _visible(root)
        students = None if any(is_module_file(e.name) for e in visible) else bulk_download(visible, _peek(root))
        if students:
            return Discovery(True, [Candidate(path, s.name, student=s) for s in students])
        if holds(root):
            return Discovery(False, [Candidate(path, _own_name(path))])
        if len(visible) == 1 and visible[0].kind == "file" and visible[0].name.lower().endswith(ZIP_SUFFIX):
            return _discover_zip(path / visible[0].name, _own_name(path))  # a folder with the download in it
        found: dict[str, str] = {}
        for entry in visible:
            if entry.kind == "folder":
                found[entry.name] = ""
            elif entry.kind == "link" and _links_to_folder(root, entry.name):
                found[entry.name] = "link"
    if not found:
        raise DiscoveryError("discovery.empty", path=printable(path))
    candidates = [Candidate(path / raw, raw, refused) for raw, refused in found.items()]
    return Discovery(True, sorted(candidates, key=lambda c: os.fsencode(c.path.name)))


def _peek(level: Level) -> Callable[[str], bytes | None]:
    """Reads a small file of LEVEL by the intake's rules (what an LMS writes beside the students'
    files: Blackboard's attempt .txt), None when it cannot be read."""

    def peek(name: str) -> bytes | None:
        try:
            return level.read(name, MAX_PEEK_BYTES)
        except (Refused, OSError):
            return None

    return peek


def _own_name(path: Path) -> str:
    return Path(os.path.abspath(path)).name or "submission"


def _discover_zip(path: Path, name: str | None = None) -> Discovery:
    """A zip: an LMS's bulk download, a class (two or more student folders, maybe all in one
    folder), or one submission (named after the zip, or `name`)."""
    try:
        with opened(path) as archive:
            root = ZipFolder(archive)
            while True:  # "class.zip" holding one folder "class/" of student folders
                visible = _visible(root)
                if len(visible) != 1 or visible[0].kind != "folder" or holds(root.subfolder(visible[0].name)):
                    break
                root = root.subfolder(visible[0].name)
            students = None if any(is_module_file(e.name) for e in visible) else bulk_download(visible, _peek(root))
            folders = [e.name for e in visible if e.kind == "folder"]
            single = not students and (holds(root, zips=True) or len(folders) < 2)
    except Refused:
        raise DiscoveryError("discovery.not-a-zip", path=printable(path)) from None
    if students:
        return Discovery(True, [Candidate(path, s.name, archive=path, parts=root.parts, student=s) for s in students])
    if single:
        own = name or path.name[: -len(ZIP_SUFFIX)] or "submission"
        return Discovery(False, [Candidate(path, own, archive=path, parts=root.parts)])
    return Discovery(True, [Candidate(path, f, archive=path, parts=root.parts + (f,)) for f in folders])


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
    """The folder of an upload that holds the modules (or a zip of them): the upload itself, or the
    first folder inside it that does (students often upload a zip with a folder in it), breadth
    first, never through a link (nor through PATH itself when it is a link, unless `follow_root`);
    None if there is none."""
    try:
        root = Folder.open(Path(path), follow=follow_root)
    except Refused:
        return None
    with root:
        parts = upload_level(root, depth, folders)
    return None if parts is None else Path(path).joinpath(*parts)


def holds_upload(path: Path, *, follow_root: bool = True) -> bool:
    """Whether an upload holds anything the grader would read (`grader.intake.uploads.upload_places`:
    modules or notebooks in it or in a folder of it, or a zip), never through a link (nor through
    PATH itself when it is a link, unless `follow_root`)."""
    try:
        with Folder.open(Path(path), follow=follow_root) as root:
            return bool(upload_places(root))
    except (Refused, OSError):
        return False


# -- reading one submission -------------------------------------------------------------------------


def read_submission(
    path: Path, name: str | None = None, *, follow: bool = False, near_misses: bool = True
) -> Submission:
    """Sources of the seven modules in the folder PATH, from .py files or, where there is none,
    notebooks (or, when it holds neither, the zip in it). PATH itself is not followed if it is a
    link (unless `follow`: a folder the instructor named): then the submission is empty, with a
    note saying why. Without `near_misses`, its intake lists no misspelt names (they are looked
    for in its parsed code): a first look, for its name, content and track only."""
    path = Path(path)
    shown_name = name or decode_name(path.name or str(path))
    try:
        folder = Folder.open(path, follow=follow)
    except Refused as exc:
        return submission_from_files(shown_name, path, {}, [_folder_note(exc.reason, path)])
    with folder:
        assembly = Assembly(shown_name, path, near_misses=near_misses)
        read_level(folder, assembly)
        return assembly.submission()


def read_candidate(candidate: Candidate, follow: bool = False, *, near_misses: bool = True) -> Submission:
    """A discovered submission as a Submission: never raises (a failure is the student's note).
    `near_misses` as for `read_submission`."""
    try:
        if candidate.refused:
            return submission_from_files(
                candidate.name, candidate.path, {}, [_folder_note(candidate.refused, candidate.path)]
            )
        if candidate.upload:
            return _read_upload(candidate, follow, near_misses)
        if candidate.archive is not None:
            return _read_zipped(candidate, near_misses)
        if candidate.student is not None:
            with Folder.open(candidate.path, follow=True) as root:
                return _read_student(root, candidate, near_misses)
        submission = read_submission(candidate.path, candidate.name, follow=follow, near_misses=near_misses)
        if not submission.sources and not submission.problems:
            # students often hand in a folder inside their folder (an unzipped alice/ch3/): grade
            # the first folder in it that holds the modules, as the grading platforms do
            inner = find_upload(candidate.path, follow_root=follow)
            if inner is not None and inner != candidate.path:
                submission = read_submission(inner, candidate.name, near_misses=near_misses)
        return submission
    except Exception as exc:  # noqa: BLE001 - one student's files never stop the class
        return submission_from_files(
            candidate.name, candidate.path, {}, [IntegrityNote("submission.unreadable", printable(type(exc).__name__))]
        )


def _read_upload(candidate: Candidate, follow: bool, near_misses: bool) -> Submission:
    """One student's upload: the folder in it that holds the modules, or the most complete of two
    (`grader.intake.uploads.read_upload`: ch3/ beside ch3_backup/, said in a remark), a zip in it
    read the same way; names are never read as an LMS's, folders never as a class's."""
    try:
        folder = Folder.open(candidate.path, follow=follow)
    except Refused as exc:
        return submission_from_files(candidate.name, candidate.path, {}, [_folder_note(exc.reason, candidate.path)])
    with folder:
        assembly = Assembly(candidate.name, candidate.path, near_misses=near_misses)
        read_upload(folder, assembly)
        return assembly.submission()


def _read_zipped(candidate: Candidate, near_misses: bool) -> Submission:
    assert candidate.archive is not None
    try:
        with opened(candidate.archive) as archive:
            root = ZipFolder(archive, candidate.parts)
            if candidate.student is not None:
                return _read_student(root, candidate, near_misses)
            assembly = Assembly(candidate.name, candidate.path, near_misses=near_misses)
            read_upload(root, assembly)
            return assembly.submission()
    except Refused as exc:
        note = file_note(exc.reason, candidate.path.name, False)
        return submission_from_files(candidate.name, candidate.path, {}, [note])


def _read_student(root: Level, candidate: Candidate, near_misses: bool) -> Submission:
    """One student of an LMS download: their folders' upload, their files under their own names."""
    student = candidate.student
    assert student is not None
    assembly = Assembly(candidate.name, candidate.path, near_misses=near_misses)
    assembly.identity = student.identity
    assembly.remarks = list(student.again)
    for folder in student.folders:
        try:
            with descend(root, (folder,)) as own:
                read_upload(own, assembly)
        except (Refused, OSError) as exc:
            assembly.problems.append(_folder_note(getattr(exc, "reason", "unreadable"), Path(folder)))
    if student.files:
        read_level(RenamedFolder(root, dict(student.files)), assembly)
    return assembly.submission()


def notebook_submission(name: str, path: Path, root: Path | None = None) -> Submission:
    """One notebook file as a whole submission (nbgrader's submitted copy of the assignment): read
    by the rules above, and with ROOT (nbgrader's submitted/ folder) no link followed below it; a
    refused file is the submission's note."""
    path = Path(path)
    try:
        files = {path.name: read_below(root, path, MAX_NOTEBOOK_BYTES)}
        problems: list[IntegrityNote] = []
    except Refused as exc:
        files, problems = {}, [file_note(exc.reason, path.name, True)]
    return submission_from_files(name, path.parent, files, problems)


def _folder_note(reason: str, path: Path) -> IntegrityNote:
    return IntegrityNote(f"submission.folder-{reason}", decode_name(path.name or str(path)))
