"""Moodle: "Download all submissions" and the two grade imports.

The download (mod/assign/classes/downloader.php of moodle/moodle): a zip of one folder per student
and submission plugin, ``<Full Name>_<participant id>_assignsubmission_file`` (``..._file_``
before Moodle 4.1; underscores in the name become spaces), the files inside under their own names;
without "Download submissions in folders", flat files
``<Full Name>_<participant id>_assignsubmission_file_<file name>``. The participant id is the
assignment's own number for the student (the "Participant 123" of its grading worksheet). Names are
read from the left: the first ``_<digits>_assignsubmission_<plugin>_`` ends Moodle's part, whatever
the student's file name holds after it. Moodle keeps only the latest version of a file: there is
no re-upload to say; late is not in its names.

The imports. The assignment's grading worksheet (mod/assign/feedback/offline, "Upload grading
worksheet"; importgradeslib.php reads "Identifier" = "Participant <id>", "Grade" and "Last modified
(grade)"): what a download's participant ids go into, one grade per student (with `--by section`
the section columns come instead of "Grade", for a spreadsheet; the worksheet takes only "Grade").
The gradebook's CSV import (Grades > Import > CSV file, grade/import/csv): a header, then one row
per student; the teacher maps one column to the users' username, ID number, email address or id
and each grade column to a grade item. No points-possible row: a row whose identifier matches no
user stops the whole import; the maximum is the grade item's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grader.lms.base import LmsFormat, Named, Peek, Reading, Sheet, Student, is_code
from grader.records import LmsIdentity

_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
_FILE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.+)$")
IDENTITY = ("First name", "Last name", "Username", "ID number", "Email address")
MAPPABLE = ("Username", "ID number", "Email address")
WORKSHEET = ("Identifier", "Full name")
PARTICIPANT = "Participant "
GRADE = "Grade"
MODIFIED = "Last modified (grade)"


class Moodle(LmsFormat):
    name = "moodle"
    title = "Moodle"

    def read(self, entries: Sequence[Named], peek: Peek | None = None) -> Reading | None:
        folders = [e for e in entries if e.kind == "folder"]
        code = [e for e in entries if e.kind != "folder" and is_code(e.name)]
        if folders and not code and all(_FOLDER.match(e.name) for e in folders):
            return self._folders(folders)
        if code and not folders and all(_FILE.match(e.name) for e in code):
            return self._files(code, [e for e in entries if e.kind != "folder" and not is_code(e.name)])
        return None

    def _folders(self, folders: list[Named]) -> Reading:
        by_student: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for entry in folders:
            match = _FOLDER.match(entry.name)
            assert match is not None
            by_student.setdefault((match["name"], match["id"]), []).append((match["plugin"], entry.name))
        students = [
            Student(
                f"{name}_{number}",
                LmsIdentity(self.name, number, name),
                tuple(f for plugin, f in sorted(found) if plugin == "file"),
            )
            for (name, number), found in sorted(by_student.items())
        ]
        return Reading(students, {e.name: len(e.name) for e in folders})  # (every folder is Moodle's)

    def _files(self, files: list[Named], others: Sequence[Named] = ()) -> Reading:
        by_student: dict[tuple[str, str], dict[str, str]] = {}
        prefixes = {}
        for entry in files:
            match = _FILE.match(entry.name)
            assert match is not None
            own = by_student.setdefault((match["name"], match["id"]), {})
            if match["plugin"] == "file":
                own[match["original"]] = entry.name
            prefixes[entry.name] = match.start("original")
        for entry in others:  # its other files (an online text): Moodle's too
            if other := _FILE.match(entry.name):
                prefixes[entry.name] = other.start("original")
        students = [
            Student(f"{name}_{number}", LmsIdentity(self.name, number, name), files=tuple(sorted(found.items())))
            for (name, number), found in sorted(by_student.items())
        ]
        return Reading(students, prefixes)

    def download_sheet(self) -> Sheet:
        return Sheet(WORKSHEET, WORKSHEET[0], after=(MODIFIED,))

    def grade_titles(self, titles: list[tuple[str, float]], by: str, sheet: Sheet) -> list[str]:
        if sheet.identity == WORKSHEET and by == "assignment":
            return [GRADE]  # the worksheet takes only "Grade"
        return [title for title, _ in titles]

    def download_row(self, who: LmsIdentity, modified: str) -> tuple[list[str], list[str]]:
        return [PARTICIPANT + who.user_id, who.name], [modified]

    def roster_sheet(self, header: list[str], key: str) -> Sheet:
        identity = tuple(c for c in IDENTITY if c in header) or (key,)
        column = key if key in identity else next((c for c in MAPPABLE if c in identity), identity[0])
        return Sheet(identity, column)

    def name_sheet(self) -> Sheet:
        return Sheet(("Student",), "Student")

    def name_row(self, name: str) -> tuple[list[str], list[str]]:
        return [name], []

    def next_step(self, sheet: Sheet) -> tuple[str, dict[str, str]]:
        if sheet.identity == WORKSHEET:
            return "export-moodle-worksheet-next", {}
        return "export-moodle-next", {"column": sheet.identity_column}
