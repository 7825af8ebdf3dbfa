"""Bulk downloads of an LMS, recognised by their names and grouped into one submission per student.

Canvas ("Download Submissions", lib/content_zipper.rb of instructure/canvas-lms): one flat zip;
each file a student uploaded is named ``<name>[_LATE]_<user id>_<file id>_<file name>``: the
student's sortable name in lower case without anything but letters, digits and underscores, LATE
when the submission was late (older Canvas wrote ``late``), Canvas's user id (``anon_<id>`` when
students are anonymous), the id of the uploaded file, then the name the student gave it. A file
uploaded again under a name already taken gets ``-1``, ``-2``... before its extension
(Attachment.make_unique_filename): the latest upload (the highest file id) is graded, under the
name without the number, and the report says so.

Moodle ("Download all submissions", mod/assign/classes/downloader.php of moodle/moodle): a zip of
one folder per student and submission plugin, ``<Full Name>_<participant id>_assignsubmission_file``
(``..._file_`` before Moodle 4.1; underscores in the name become spaces), the files inside under
their own names; without "Download submissions in folders", flat files
``<Full Name>_<participant id>_assignsubmission_file_<file name>``. The participant id is the
assignment's own number for the student (the "Participant 123" of its grading worksheet).

Each student is named as the LMS names them (``<name>_<user id>``, ``<Full Name>_<participant
id>``) and keeps the LMS's identity (`grader.records.LmsIdentity`) for `grade export`.
Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.intake.archives import ZIP_SUFFIX
from grader.intake.files import Entry
from grader.records import IntegrityNote, LmsIdentity

_CANVAS = re.compile(r"^(?P<login>\w*?)(?:_(?P<late>LATE|late))?_(?P<user>\d+)_(?P<file>\d+)_(?P<original>.+)$")
_CANVAS_ANONYMOUS = re.compile(r"^(?:(?P<late>LATE|late)_)?(?P<user>anon_[A-Za-z0-9]+)_(?P<file>\d+)_(?P<original>.+)$")
_MOODLE_FOLDER = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
_MOODLE_FILE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.+)$")
_AGAIN = re.compile(r"^(?P<stem>.+?)-(?P<n>[1-9]\d*)(?P<suffix>(?:\.[A-Za-z][A-Za-z0-9]*)*\.[A-Za-z0-9]*)$")
JUNK = {"__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}
CODE_SUFFIXES = (".py", ".ipynb", ZIP_SUFFIX)


@dataclass(frozen=True)
class Student:
    """One student of a bulk download: their name (as the LMS writes it), identity, the folders
    (`folders`: Moodle) or the files (`files`: student's file name -> name in the download) that
    are theirs, and the files uploaded again whose latest upload is graded (`again`)."""

    name: str
    identity: LmsIdentity
    folders: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    again: tuple[IntegrityNote, ...] = ()


def _visible(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.name not in JUNK and not e.name.startswith(".")]


def _canvas(name: str) -> re.Match | None:
    return _CANVAS.match(name) or _CANVAS_ANONYMOUS.match(name)


def bulk_download(entries: list[Entry]) -> list[Student] | None:
    """The students of a folder's (or zip's) top level when it is a Canvas or Moodle bulk download;
    None when it is not one (every file or folder that could hold code must have the LMS's name)."""
    visible = _visible(entries)
    files = [e for e in visible if e.kind != "folder"]
    folders = [e for e in visible if e.kind == "folder"]
    code = [e for e in files if e.name.lower().endswith(CODE_SUFFIXES)]
    if folders and all(_MOODLE_FOLDER.match(e.name) for e in folders) and not code:
        return _moodle_folders(folders)
    if not folders and code and all(_MOODLE_FILE.match(e.name) for e in code):
        return _moodle_files(code)
    if code and all(_canvas(e.name) for e in code + folders):  # (Canvas writes no folder: one is its owner's)
        return _canvas_students(code + folders)
    return None


def _moodle_folders(folders: list[Entry]) -> list[Student]:
    by_student: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for entry in folders:
        match = _MOODLE_FOLDER.match(entry.name)
        assert match is not None
        by_student.setdefault((match["name"], match["id"]), []).append((match["plugin"], entry.name))
    return [
        Student(
            f"{name}_{number}", LmsIdentity("moodle", number, name), tuple(f for p, f in sorted(found) if p == "file")
        )
        for (name, number), found in sorted(by_student.items())
    ]


def _moodle_files(files: list[Entry]) -> list[Student]:
    by_student: dict[tuple[str, str], dict[str, str]] = {}
    for entry in files:
        match = _MOODLE_FILE.match(entry.name)
        assert match is not None
        if match["plugin"] == "file":
            by_student.setdefault((match["name"], match["id"]), {})[match["original"]] = entry.name
        else:
            by_student.setdefault((match["name"], match["id"]), {})
    return [
        Student(f"{name}_{number}", LmsIdentity("moodle", number, name), files=tuple(sorted(found.items())))
        for (name, number), found in sorted(by_student.items())
    ]


def _canvas_students(files: list[Entry]) -> list[Student]:
    by_user: dict[str, list[tuple[re.Match, str]]] = {}
    for entry in files:
        match = _canvas(entry.name)
        assert match is not None
        by_user.setdefault(match["user"], []).append((match, entry.name))
    students = []
    for user, found in sorted(by_user.items()):
        login = next((m.groupdict().get("login") or "" for m, _ in found if m.groupdict().get("login")), "")
        late = any(m["late"] for m, _ in found)
        chosen, again = _latest(found)
        name = f"{login}_{user}" if login else user
        students.append(Student(name, LmsIdentity("canvas", user, login or user, late), files=chosen, again=again))
    return students


def _latest(found: list[tuple[re.Match, str]]) -> tuple[tuple[tuple[str, str], ...], tuple[IntegrityNote, ...]]:
    """(student's name -> name in the download) of each file, the latest upload of a name uploaded
    again (the highest file id) under the name without Canvas's -N; and a note for each such name."""
    uploads: dict[str, list[tuple[int, str, str]]] = {}
    for match, entry in found:
        original = match["original"]
        again = _AGAIN.match(original)
        base = again["stem"] + again["suffix"] if again else original
        uploads.setdefault(base, []).append((int(match["file"]), original, entry))
    chosen, notes = [], []
    for base, versions in sorted(uploads.items()):
        versions.sort()
        chosen.append((base, versions[-1][2]))
        if len(versions) > 1:
            listed = ", ".join(original for _, original, _ in versions)
            notes.append(IntegrityNote("reuploaded", f"{versions[-1][1]} ({listed})"))
    return tuple(chosen), tuple(notes)
