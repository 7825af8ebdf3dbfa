"""Blackboard Learn: "Assignment File Download" and the Grade Center upload.

The download (Grade Center > the assignment's column > Assignment File Download; the shape its
users document, e.g. "files are renamed from filename.ext to
assignmentname_username_attempt_datetime_filename.ext" and "a text file is created for each student
named assignmentname_username_attempt_datetime.txt"): one flat zip; each file a student handed in is
``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name>``, and each attempt has
``<assignment>_<username>_attempt_<date>.txt`` whose first line Blackboard writes as
``Name: <Full Name> (<username>)``. Names are read from the left: the first ``_attempt_<date>``
ends Blackboard's part, whatever the student's file name holds after it.

Where the documentation is silent, the kit assumes: the assignment's title is the same in every name
of one download and may hold underscores, as may a username; so the username is the one the
attempt's .txt names, and without a .txt, what follows the title that every name of the download
starts with (the shortest such title, so that an unclear split gives a username that matches nobody
rather than someone else). Blackboard's names carry no late mark: the report says nothing of
lateness. Several attempts of one student: the latest (by its date) is graded and the report says
which attempts were not.

The upload (Grade Center > Work Offline > Upload; help.blackboard.com "Work Offline with Grade
Data"): a CSV whose rows are matched to students by "Username", the one identifier the Grade Center
needs; a column is matched to an existing one by the column id after "|" in its header (``Chapter 3
[Total Pts: 63 Score] |12345``, as Work Offline > Download writes it); a column without an id
creates a new column (a text column with 0 points possible, which the instructor then edits). With
`--roster` (the Grade Center's own download), its identity columns ("Last Name", "First Name",
"Username", "Student ID") are copied and a column of the roster named like the assignment gives its
id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grader.lms.base import LmsFormat, Named, Peek, Reading, Sheet, Student
from grader.records import IntegrityNote, LmsIdentity

_ATTEMPT = re.compile(r"_attempt_(?P<date>\d{4}(?:-\d{2}){5})(?:_(?P<original>.+)|\.txt)$")
_TXT_NAME = re.compile(r"^Name: (?P<full>.*) \((?P<username>[^()\r\n]+)\)\s*$")
IDENTITY = ("Last Name", "First Name", "Username", "Student ID")
USERNAME = "Username"
COLUMN_ID = re.compile(r"^(?P<title>.*?)(?: \[[^\]]*\])? \|(?P<id>\d+)$")


class Blackboard(LmsFormat):
    name = "blackboard"
    title = "Blackboard Learn"

    def read(self, entries: Sequence[Named], peek: Peek | None = None) -> Reading | None:
        files = [e for e in entries if e.kind != "folder"]
        matches = {e.name: _first_attempt(e.name) for e in files}
        if not files or any(e.kind == "folder" for e in entries) or not all(matches.values()):
            return None
        heads = {name: name[: m.start()] for name, m in matches.items() if m}  # <assignment>_<username>
        named = _usernames_from_txt(matches, heads, peek)
        title = _title(heads, named)
        if title is None:
            return None
        attempts: dict[str, dict[str, list[tuple[str, str]]]] = {}  # username -> date -> files
        full_names: dict[str, str] = {}
        for name, match in matches.items():
            assert match is not None
            username = heads[name][len(title) + 1 :]
            own = attempts.setdefault(username, {}).setdefault(match["date"], [])
            if match["original"] is not None:
                own.append((match["original"], name))
            elif name in named:
                full_names[username] = named[name][0]
        students = [self._student(u, dates, full_names.get(u, u)) for u, dates in sorted(attempts.items())]
        return Reading(
            students, {name: m.start("original") if m["original"] else len(name) for name, m in matches.items() if m}
        )

    def _student(self, username: str, dates: dict[str, list[tuple[str, str]]], full: str) -> Student:
        latest = max(dates)
        notes: tuple[IntegrityNote, ...] = ()
        if len(dates) > 1:
            notes = (IntegrityNote("attempts", f"{latest} ({', '.join(sorted(dates))})"),)
        return Student(
            username, LmsIdentity(self.name, username, full), files=tuple(sorted(dates[latest])), again=notes
        )

    def download_sheet(self) -> Sheet:
        return Sheet((USERNAME,), USERNAME)

    def download_row(self, who: LmsIdentity, modified: str) -> tuple[list[str], list[str]]:
        return [who.user_id], []

    def roster_sheet(self, header: list[str], key: str) -> Sheet:
        identity = tuple(c for c in IDENTITY if c in header) or (key,)
        return Sheet(identity, USERNAME if USERNAME in header else key, roster_columns=tuple(header))

    def grade_titles(self, titles: list[tuple[str, float]], by: str, sheet: Sheet) -> list[str]:
        """A title the roster (the Grade Center's download) has, with its column id, is written as
        the roster writes it: the upload then fills that column."""
        existing: dict[str, str] = {}
        for column in sheet.roster_columns:
            match = COLUMN_ID.match(column)
            if match:
                existing.setdefault(match["title"].strip(), column)
        return [existing.get(title.strip(), title) for title, _ in titles]

    def name_sheet(self) -> Sheet:
        return Sheet((USERNAME,), USERNAME)

    def name_row(self, name: str) -> tuple[list[str], list[str]]:
        return [name], []

    def next_step(self, sheet: Sheet) -> tuple[str, dict[str, str]]:
        return "export-blackboard-next", {}


def _first_attempt(name: str) -> re.Match | None:
    """The leftmost ``_attempt_<date>`` that ends a name as Blackboard writes it."""
    for found in re.finditer(r"_attempt_\d{4}(?:-\d{2}){5}", name):
        match = _ATTEMPT.match(name, found.start())
        if match is not None and found.start() > 0:
            return match
    return None


def _usernames_from_txt(
    matches: dict[str, re.Match | None], heads: dict[str, str], peek: Peek | None
) -> dict[str, tuple[str, str]]:
    """name of an attempt's .txt -> (full name, username) as its first line says, where the name's
    head ends in ``_<username>``."""
    named = {}
    for name, match in matches.items():
        if peek is None or match is None or match["original"] is not None:
            continue
        data = peek(name)
        first = (data or b"").split(b"\n", 1)[0].decode("utf-8-sig", "replace")
        line = _TXT_NAME.match(first)
        if line and heads[name].endswith("_" + line["username"]) and len(heads[name]) > len(line["username"]) + 1:
            named[name] = (line["full"], line["username"])
    return named


def _title(heads: dict[str, str], named: dict[str, tuple[str, str]]) -> str | None:
    """The assignment's title that every head starts with: the one the attempts' .txt files give
    (they must agree), else the shortest title before an underscore that every head shares; None
    when there is none."""
    values = set(heads.values())

    def fits(title: str) -> bool:
        return all(head.startswith(title + "_") and len(head) > len(title) + 1 for head in values)

    from_txt = {heads[name][: -len(username) - 1] for name, (_, username) in named.items()}
    if from_txt:
        return from_txt.pop() if len(from_txt) == 1 and fits(next(iter(from_txt))) else None
    first = min(values)
    shared = [first[:i] for i, c in enumerate(first) if c == "_" and i > 0]
    return next((title for title in shared if fits(title)), None)
