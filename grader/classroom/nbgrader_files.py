"""A submission's files in nbgrader: no link followed, no special file read, one student's files
never stop the class.

nbgrader's converters copy every file of a student's folder that is not a notebook
(``BaseConverter.init_assignment``: ``shutil.copy``, which follows links and opens pipes and
devices): ``nbgrader autograde`` from submitted/ into autograded/, ``nbgrader generate_feedback``
from autograded/ into feedback/, which ``nbgrader release_feedback`` hands back. A link
``notes.txt -> ../../../source/ch3/ch3_attention.ipynb`` put the answer key in the student's
feedback, a link to /etc/passwd a file of the machine; a link to /dev/stdin made autograde wait for
ever, a named pipe failed it. And nbgrader reads ``timestamp.txt`` with a plain ``open`` (a link to
the terminal, a pipe: the same wait), then hands its time zone to dateutil, which opens a file of
that name.

The course's config calls `guard_submission_files` when nbgrader loads it, which makes both steps
the kit's, in every nbgrader command:

* `copy_extra_files`: the submission's files (those nbgrader would copy: not notebooks, not the
  course's ignored names) are read by the kit's intake rules (grader.intake.files: no link
  followed at any point, a regular file with one name only, at most MAX_EXTRA_BYTES) and written
  with their permission bits. Anything else (a link, a hard link, a pipe, a device, a socket, a
  file too large, a folder nested too deep, a submission folder that is itself a link) is never
  read: a short note of the same name stands in its place, saying why (in the course's language),
  and the first test cell's feedback lists it (`withheld_of`);
* `read_timestamp`: timestamp.txt only as a regular file of at most MAX_TIMESTAMP_BYTES, and a time
  zone only when it is an offset, a plain abbreviation or a name of the time zone database;
  anything else is read as no timestamp (nbgrader's own answer to a missing one), with a warning.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import tempfile
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from grader.i18n import Catalog
from grader.intake.files import Folder, Refused, read_file

MAX_EXTRA_BYTES = 32 * 1024 * 1024  # one file of a submission copied
MAX_EXTRA_FILES = 2000  # files of a submission copied (the rest stand as one note)
MAX_DEPTH = 16  # folders within folders
MAX_TIMESTAMP_BYTES = 256
_ZONE_ABBREVIATION = re.compile(r"[A-Za-z]{1,10}")
_OFFSET = re.compile(r"[+-]?\d{1,4}")


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


def copy_extra_files(folder: Folder, dest: Path, ignored: Callable[[str], bool], catalog: Catalog) -> list[Withheld]:
    """Copy the files of the open submission FOLDER into DEST as nbgrader would, by the kit's rules
    (see the module); IGNORED(name) says which names nbgrader leaves out. Returns what was withheld."""
    copy = _Copy(ignored, catalog)
    copy.folder(folder, dest, "", 0)
    return copy.withheld


class _Copy:
    """One submission's copy: what was withheld, how many files so far (at most MAX_EXTRA_FILES)."""

    def __init__(self, ignored: Callable[[str], bool], catalog: Catalog):
        self.ignored = ignored
        self.catalog = catalog
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
            elif entry.kind == "file":
                self.file(folder, entry.name, dest / entry.name, path)
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


def open_submission(step_root: Path, source: Path) -> Folder:
    """The submission folder SOURCE, opened below nbgrader's step folder STEP_ROOT (submitted/,
    autograded/) without following a link on the way (a student's folder that is a link to a
    classmate's, or to the course's source, is refused: Refused("link"))."""
    try:
        parts = source.relative_to(step_root).parts
    except ValueError:
        return Folder.open(source, follow=True)  # a directory_structure of the course's own
    folder = Folder.open(step_root, follow=True)
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise Refused("unreadable", part)
            inner = folder.subfolder(part)
            folder.close()
            folder = inner
        return folder
    except BaseException:
        folder.close()
        raise


# -- timestamp.txt ------------------------------------------------------------------------------


@cache
def _zone_names() -> frozenset[str]:
    try:
        return frozenset(zoneinfo.available_timezones())
    except Exception:  # noqa: BLE001 - no time zone database: abbreviations and offsets only
        return frozenset()


def safe_zone(zone: str) -> bool:
    """Whether a time zone of a timestamp can be looked up without opening a file it names: an
    offset, a plain abbreviation (UTC, CET) or a name of the time zone database (Asia/Shanghai)."""
    return bool(_OFFSET.fullmatch(zone) or _ZONE_ABBREVIATION.fullmatch(zone) or zone in _zone_names())


def parse_timestamp(text: str) -> datetime | None:
    """A timestamp as nbgrader parses it (nbgrader.utils.parse_utc), or None when it cannot be read
    safely (a time zone that names a file, such as /dev/stdin) or at all."""
    from nbgrader.utils import parse_utc

    parts = text.split(" ")
    if len(parts) == 3 and not safe_zone(parts[2]):  # parse_utc would hand it to dateutil's gettz
        return None
    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError, LookupError):
        return None


def read_timestamp(folder: str, log: Any) -> datetime | None:
    """The time in FOLDER/timestamp.txt (see the module); None when there is none or it cannot be
    read safely, with a warning."""
    path = Path(folder) / "timestamp.txt"
    try:
        raw = read_file(path, MAX_TIMESTAMP_BYTES)
    except Refused as exc:
        if exc.reason != "gone":
            log.warning(
                "attention-kit: %s is not read (%s): the submission counts as having no timestamp", path, exc.reason
            )
        return None
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        log.warning("Empty timestamp file: %s", path)
        return None
    parsed = parse_timestamp(text)
    if parsed is None:
        log.warning("attention-kit: %s holds no time it can read: the submission counts as having no timestamp", path)
    return parsed


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
    step_root = Path(os.path.abspath(self.coursedir.format_path(self._input_directory, ".", ".")))
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


def guard_submission_files() -> None:
    """Make nbgrader's copy of a submission's files and its reading of timestamp.txt the kit's (see
    the module). Called by the course's config, so that it holds in every nbgrader command."""
    from nbgrader.converters.base import BaseConverter
    from nbgrader.coursedir import CourseDirectory

    if BaseConverter.init_assignment is not _init_assignment:
        _NBGRADERS["init_assignment"] = BaseConverter.init_assignment
    BaseConverter.init_assignment = _init_assignment
    CourseDirectory.get_existing_timestamp = _get_existing_timestamp
