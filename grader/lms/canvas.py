"""Canvas: "Download Submissions" and the gradebook import.

The download (lib/content_zipper.rb of instructure/canvas-lms): one flat zip; each file a student
uploaded is named ``<login>[_LATE]_<user id>_<file id>_<file name>``: the login is the student's
sortable name in lower case with only word characters kept and ``_<digits>_`` inside it made
``<digits>`` (`sanitize_user_name`: "we use /_\\d+_/ to infer the user/attachment ids"), LATE when
the submission was late (older Canvas wrote ``late``), Canvas's user id (``anon_<id>`` when students
are anonymous), the id of the uploaded file, then the name the student gave it. A file uploaded
again under a name already taken gets ``-1``, ``-2``... before its extension
(Attachment.make_unique_filename): the latest upload (the highest file id) is graded, under the name
without the number, and the report says so. Names are read from the left: the first
``_<digits>_<digits>_`` after the login ends Canvas's part. Only a login that ends in ``_<digits>``
could be read two ways; it is read as Canvas reads it back, with the first ``_<digits>_`` for the
user id.

The import (app/models/gradebook_importer.rb): the header starts with "Student" and "ID", then "SIS
User ID" and "SIS Login ID", then "Section"; every further column is an assignment (an existing one
is matched by "Title (id)" or its title, any other title creates one); a row whose first cell
contains "Points Possible" gives the points of each assignment; a student is matched by ID (Canvas's
own number), else SIS User ID, else SIS Login ID, else name; a blank grade changes nothing. Columns
named like "Current Score" or "Final Grade" are ignored, so the kit never writes a total beside
per-section columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grader.lms.base import LmsFormat, Named, Peek, Reading, Sheet, Student, is_code, latest, number_order
from grader.records import LmsIdentity

_NAMED = re.compile(r"^(?P<login>\w*?)(?:_(?P<late>LATE|late))?_(?P<user>\d+)_(?P<file>\d+)_(?P<original>.+)$")
_ANONYMOUS = re.compile(r"^(?:(?P<late>LATE|late)_)?(?P<user>anon_[A-Za-z0-9]+)_(?P<file>\d+)_(?P<original>.+)$")
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_ROW = "Points Possible"


def _match(name: str) -> re.Match | None:
    return _NAMED.match(name) or _ANONYMOUS.match(name)


class Canvas(LmsFormat):
    name = "canvas"
    title = "Canvas"

    def read(self, entries: Sequence[Named], peek: Peek | None = None) -> Reading | None:
        code = [e for e in entries if e.kind != "folder" and is_code(e.name)]
        folders = [e for e in entries if e.kind == "folder"]  # (Canvas writes none: one is its owner's)
        matches = {e.name: _match(e.name) for e in code + folders}
        if not code or not all(matches.values()):
            return None
        claimed = {e.name: m for e in entries if (m := matches.get(e.name) or _match(e.name))}
        file_ids = [m["file"] for m in claimed.values()]
        doubtful = len(set(file_ids)) < len(file_ids)  # Canvas gives every file its own id
        by_user: dict[tuple[str, str], list[re.Match]] = {}
        for match in matches.values():
            assert match is not None
            by_user.setdefault((match.groupdict().get("login") or "", match["user"]), []).append(match)
        students = []  # (two logins with one user id are two students: the export gives neither a grade)
        for (login, user), found in sorted(by_user.items()):
            late = any(m["late"] for m in found)
            files, again = latest([(number_order(m["file"]), m["original"], m.string) for m in found])
            who = LmsIdentity(self.name, user, login or user, late)
            students.append(Student(f"{login}_{user}" if login else user, who, files=files, again=again))
        return Reading(students, {name: m.start("original") for name, m in claimed.items()}, doubtful)

    def download_sheet(self) -> Sheet:
        return Sheet(IDENTITY, "ID", POINTS_ROW)

    def download_row(self, who: LmsIdentity, modified: str) -> tuple[list[str], list[str]]:
        number = who.user_id if who.user_id.isdigit() else ""  # (anonymous: matched by name)
        return [who.name, number, "", "" if number else who.name, ""], []

    def roster_sheet(self, header: list[str], key: str) -> Sheet:
        return Sheet(IDENTITY, key if key in IDENTITY else IDENTITY[0], POINTS_ROW)

    def roster_row(self, row: dict[str, str], name: str, sheet: Sheet) -> tuple[list[str], list[str]]:
        values = [row.get(column, "") for column in sheet.identity]
        if not any(values[1:4]):
            values[3] = name  # no Canvas id in the roster: matched by login
        return values, []

    def name_sheet(self) -> Sheet:
        return Sheet(IDENTITY, "SIS Login ID", POINTS_ROW)

    def name_row(self, name: str) -> tuple[list[str], list[str]]:
        return [name, "", "", name, ""], []

    def next_step(self, sheet: Sheet) -> tuple[str, dict[str, str]]:
        return "export-canvas-next", {}
