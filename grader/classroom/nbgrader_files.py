"""A submission's files in nbgrader: no link followed, no special file read, one student's files
never stop the class.

nbgrader copies a student's files with ``shutil``, which follows links and opens pipes and
devices: ``nbgrader collect`` the student's folder in the exchange's inbound/ into submitted/
(``copytree``), ``nbgrader autograde`` every file that is not a notebook from submitted/ into
autograded/ and ``nbgrader generate_feedback`` from autograded/ into feedback/, which ``nbgrader
release_feedback`` hands back (``BaseConverter.init_assignment``: ``shutil.copy``). A link
``notes.txt -> ../../../source/ch3/ch3_attention.ipynb`` put the answer key in the student's
feedback, a link to /etc/passwd a file of the machine; a link to /dev/stdin made the command wait
for ever, a named pipe failed it for the class. nbgrader's timestamp.txt: see nbgrader_timestamp.

The course's config calls `guard_submission_files` when nbgrader loads it, which makes these steps
the kit's, in every nbgrader command: the files nbgrader would copy (collect: all but the course's
ignored names, its included names and size limit; autograde and generate_feedback: not
notebooks either) are read by the kit's intake rules (grader.intake.files: no link followed at any
point, a regular file with one name only, at most MAX_EXTRA_BYTES) and written with their
permission bits (`copy_extra_files`). Anything else (a link, a hard link, a pipe, a device, a
socket, a file too large, a folder nested too deep, a submission folder that is itself a link) is
never read: a short note of the same name stands in its place, saying why (in the course's
language), and the first test cell's feedback lists what autograde withheld (`withheld_of`).
"""

from __future__ import annotations

import fnmatch
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from grader.classroom.nbgrader_timestamp import inbound_record, read_timestamp, readable_records
from grader.i18n import Catalog
from grader.intake.files import Folder, Refused, open_beneath

MAX_EXTRA_BYTES = 32 * 1024 * 1024  # one file of a submission copied
MAX_EXTRA_FILES = 2000  # files of a submission copied (the rest stand as one note)
MAX_DEPTH = 16  # folders within folders


@dataclass(frozen=True)
class Withheld:
    """A file of a submission that was not copied: `path` relative to the submission folder,
    `reason` as grader.intake.files.Refused names it (or too-deep, too-many, folder-link)."""

    path: str
    reason: str


_WITHHELD: dict[tuple[str, str], list[Withheld]] = {}


def withheld_of(info: dict) -> list[Withheld]:
    """What this run did not copy of the student's submission (`info`: resources["nbgrader"])."""
    return list(_WITHHELD.get((str(info.get("assignment")), str(info.get("student"))), []))


def withheld_text(item: Withheld, catalog: Catalog) -> str:
    return catalog.t(f"classroom.nbgrader.withheld.{item.reason}", path=item.path, megabytes=MAX_EXTRA_BYTES // 1024**2)


# -- copying a submission's files ---------------------------------------------------------------


def copy_extra_files(
    folder: Folder,
    dest: Path,
    ignored: Callable[[str], bool],
    catalog: Catalog,
    wanted: Callable[[str, int], bool] = lambda name, size: True,
) -> list[Withheld]:
    """Copy the files of the open submission FOLDER into DEST as nbgrader would, by the kit's rules
    (see the module); IGNORED(name) says which names nbgrader leaves out, WANTED(name, size) which
    regular files it copies (collect's include globs and size limit). Returns what was withheld."""
    copy = _Copy(ignored, catalog, wanted)
    copy.folder(folder, dest, "", 0)
    return copy.withheld


class _Copy:
    """One submission's copy: what was withheld, how many files so far (at most MAX_EXTRA_FILES)."""

    def __init__(self, ignored: Callable[[str], bool], catalog: Catalog, wanted: Callable[[str, int], bool]):
        self.ignored = ignored
        self.catalog = catalog
        self.wanted = wanted
        self.withheld: list[Withheld] = []
        self.files = 0
        self.full = False  # MAX_EXTRA_FILES reached: nothing more is copied

    def folder(self, folder: Folder, dest: Path, relative: str, depth: int) -> None:
        for entry in folder.entries():
            if self.ignored(entry.name) or entry.kind == "gone":
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            if self.full or self.files >= MAX_EXTRA_FILES:
                if not self.full:
                    self.withheld.append(Withheld(path, "too-many"))  # and every file after it
                self.full = True
                return
            if entry.kind == "folder" and depth < MAX_DEPTH:
                try:
                    inner = folder.subfolder(entry.name)
                except Refused as exc:
                    self.withhold(dest / entry.name, path, exc.reason)
                    continue
                with inner:
                    self.folder(inner, dest / entry.name, path, depth + 1)
            elif entry.kind == "folder":
                self.withhold(dest / entry.name, path, "too-deep")
            elif entry.kind == "file" and self.wanted(entry.name, folder.size(entry.name)):
                self.file(folder, entry.name, dest / entry.name, path)
            elif entry.kind == "file":
                continue  # left out by the course's include globs or size limit, as nbgrader does
            else:  # a link, a pipe, a device, a socket: never opened
                self.withhold(dest / entry.name, path, entry.kind)

    def file(self, folder: Folder, name: str, target: Path, path: str) -> None:
        try:
            data = folder.read(name, MAX_EXTRA_BYTES)
        except Refused as exc:
            if exc.reason != "gone":
                self.withhold(target, path, exc.reason)
            return
        try:
            mode = stat.S_IMODE(os.stat(name, dir_fd=folder.fd, follow_symlinks=False).st_mode) & 0o777
        except OSError:
            mode = 0o644
        self.files += 1
        _write(target, data, mode)

    def withhold(self, target: Path, path: str, reason: str) -> None:
        item = Withheld(path, reason)
        self.withheld.append(item)
        self.files += 1
        note = self.catalog.t("classroom.nbgrader.withheld.note", why=withheld_text(item, self.catalog))
        _write(target, (note + "\n").encode("utf-8"), 0o644)


def _write(target: Path, data: bytes, mode: int) -> None:
    """Write through a temporary file and a rename: whatever TARGET was (a file, a link), it is
    replaced, never followed; a folder of that name (from an earlier copy) is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() and not target.is_symlink():
        return
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".attention-kit-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def step_folder(coursedir: Any, step: str) -> Path:
    """The folder of an nbgrader step (coursedir.submitted_directory, autograded_directory, ...):
    what lies below it is opened without following links (`open_submission`)."""
    return Path(os.path.abspath(coursedir.format_path(step, ".", ".")))


def open_submission(step_root: Path, source: Path) -> Folder:
    """The submission folder SOURCE, opened below nbgrader's step folder STEP_ROOT (submitted/,
    autograded/) without following a link on the way (a student's folder that is a link to a
    classmate's, or to the course's source, is refused: Refused("link"))."""
    try:
        parts = source.relative_to(step_root).parts
    except ValueError:
        return Folder.open(source, follow=True)  # a directory_structure of the course's own
    return open_beneath(step_root, parts)


# -- nbgrader's side -------------------------------------------------------------------------------


def _lang(config: Any) -> str:
    try:
        lang = config.GradeWithKit.lang
    except (AttributeError, KeyError):
        return "en"
    return lang if lang in ("en", "zh") else "en"


def ignored_by(globs: list[str]) -> Callable[[str], bool]:
    """Which names nbgrader's ignore globs leave out (nbgrader.utils.is_ignored: glob's rules on the
    name alone, so a leading dot is matched only by a pattern that starts with one)."""

    def ignored(name: str) -> bool:
        return any(fnmatch.fnmatch(name, glob) and (glob.startswith(".") or not name.startswith(".")) for glob in globs)

    return ignored


_NBGRADERS: dict[str, Any] = {}  # nbgrader's own methods, for what is not a student's


def _init_assignment(self: Any, assignment_id: str, student_id: str) -> None:
    """BaseConverter.init_assignment, the kit's way for a student's files (autograde reads
    submitted/, generate_feedback autograded/): copied by `copy_extra_files` (nbgrader's own copies
    every file with shutil.copy). The course's own folders (generate_assignment) are nbgrader's."""
    if self._input_directory not in (self.coursedir.submitted_directory, self.coursedir.autograded_directory):
        return _NBGRADERS["init_assignment"](self, assignment_id, student_id)
    source = Path(os.path.abspath(self._format_source(assignment_id, student_id)))
    dest = Path(self._format_dest(assignment_id, student_id))
    step_root = step_folder(self.coursedir, self._input_directory)
    catalog = Catalog(_lang(self.config))
    ignore = list(self.coursedir.ignore) + ["*.ipynb"]
    try:
        folder = open_submission(step_root, source)
    except Refused as exc:
        withheld = [Withheld(".", "folder-link" if exc.reason == "link" else exc.reason)]
        dest.mkdir(parents=True, exist_ok=True)
    else:
        with folder:
            withheld = copy_extra_files(folder, dest, ignored_by(ignore), catalog)
    _WITHHELD[(str(assignment_id), str(student_id))] = withheld
    for item in withheld:
        self.log.warning("attention-kit did not copy %s of %s's submission (%s)", item.path, student_id, item.reason)


def _get_existing_timestamp(self: Any, dest_path: str) -> datetime | None:
    """CourseDirectory.get_existing_timestamp, the kit's way (`read_timestamp`)."""
    return read_timestamp(dest_path, self.log)


NOT_COLLECTED = "attention-kit-not-collected.txt"  # the note in a submission that was not collected


def _collect(self: Any, src: str, dest: str, log: Any = None) -> None:
    """ExchangeCollect.do_copy: the student's folder in the exchange's inbound/ into submitted/, by
    `copy_extra_files` with the course's ignore and include globs and size limits (nbgrader's
    copies it with shutil.copytree, following links). A folder that is a link, or larger than the
    course's limit, is not read: a note (NOT_COLLECTED) stands in it, and the class is collected."""
    coursedir, target = self.coursedir, Path(dest)
    if any(part in (".", "..") for part in str(dest).split(os.sep)):  # a student id "..": outside submitted/
        self.log.warning("attention-kit did not collect %s: its student id names no folder of submitted/", src)
        return
    catalog = Catalog(_lang(self.config))
    include, max_file = list(coursedir.include or []), 1000 * (coursedir.max_file_size or 0)

    def wanted(name: str, size: int) -> bool:
        return (not include or any(fnmatch.fnmatch(name, g) for g in include)) and not (max_file and size > max_file)

    try:
        folder = open_submission(Path(os.path.abspath(self.inbound_path)), Path(os.path.abspath(src)))
    except Refused as exc:
        withheld = [Withheld(".", "folder-link" if exc.reason == "link" else exc.reason)]
    else:
        with folder:
            if self.get_size(src) > 1000 * coursedir.max_dir_size:
                withheld = [Withheld(".", "folder-too-large")]
            else:
                ignored = list(coursedir.ignore)
                withheld = copy_extra_files(
                    folder, target, lambda name: any(fnmatch.fnmatch(name, g) for g in ignored), catalog, wanted
                )
    target.mkdir(parents=True, exist_ok=True)
    for item in withheld:
        if item.path == ".":
            note = catalog.t("classroom.nbgrader.withheld.note", why=withheld_text(item, catalog))
            _write(target / NOT_COLLECTED, (note + "\n").encode("utf-8"), 0o644)
        self.log.warning("attention-kit did not collect %s of %s (%s)", item.path, src, item.reason)
    if coursedir.groupshared:
        _share_with_group(target, self.log)


def _init_src(self: Any) -> None:
    """ExchangeCollect.init_src, then without the inbound entries whose names hold no readable
    timestamp (see grader.classroom.nbgrader_timestamp.inbound_record)."""
    _NBGRADERS["init_src"](self)
    self.src_records = readable_records(self.src_records, self.log)


def _share_with_group(target: Path, log: Any) -> None:
    """What nbgrader's copy does in a group-shared course: folders ug+rwx (setgid), files ug+rw."""
    for dirname, _, filenames in os.walk(target):
        paths = [(Path(dirname), 0o2770, 0o2777)] + [(Path(dirname) / name, 0o660, 0o777) for name in filenames]
        for path, wanted_bits, mask in paths:
            try:
                os.chmod(path, (path.stat().st_mode | wanted_bits) & mask)
            except OSError:
                log.warning("Could not update permissions of %s to make it groupshared", path)


def guard_submission_files() -> None:
    """Make nbgrader's copies of a submission's files and its reading of timestamp.txt the kit's
    (see the module). Called by the course's config, so that it holds in every nbgrader command."""
    from nbgrader.converters.base import BaseConverter
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    if BaseConverter.init_assignment is not _init_assignment:
        _NBGRADERS["init_assignment"] = BaseConverter.init_assignment
    BaseConverter.init_assignment = _init_assignment
    CourseDirectory.get_existing_timestamp = _get_existing_timestamp
    ExchangeCollect.do_copy = _collect
    if ExchangeCollect.init_src is not _init_src:
        _NBGRADERS["init_src"] = ExchangeCollect.init_src
    ExchangeCollect.init_src = _init_src
    ExchangeCollect._path_to_record = inbound_record
