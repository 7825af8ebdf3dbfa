"""Brightspace (D2L): an assignment's "Download" of all submissions, and the grades import.

The download (Assignments > the assignment > select all > Download): a zip with ``index.html`` (a
table of the submissions) and one folder per submission, ``<submission id>-<user id> - <Full Name>
- <date>``, holding the files under their own names; older versions wrote flat files
``<submission id>-<user id> - <Full Name>- <Mon D, YYYY HMM AM> - <file name>``. The ids come
first: Brightspace's part is read from the left, and in a flat name it ends at the first date of
Brightspace's shape, whatever the student's file name holds after it.

Where the documentation is silent, the kit assumes: the user id is Brightspace's own number for the
student (not the Org Defined ID nor the username, which the import needs); the full name is
"First Last"; a student who submitted more than once has one folder (or set of files) per
submission, with a higher submission id for a later one: the latest is graded and the report says
which were not. Brightspace's names carry no late mark: the report says nothing of lateness.

The import (Grades > Enter Grades > Import; Brightspace's sample import file): a CSV whose first two
columns are "OrgDefinedId" and "Username" (a student is matched by either), then one column per
grade item named ``<item> Points Grade`` (``<item> Points Grade <Numeric MaxPoints:63>`` creates the
item with its maximum), then "End-of-Line Indicator" holding ``#`` on every row. The download does
not carry either identifier, so an export of a class graded from it needs `--roster`, the
gradebook's own export (Grades > Export, key field "Both", with first and last names): each student
is matched to the one row whose "First Name" and "Last Name" make the download's full name; a name
two rows have gets no grade, and is named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grader.lms.base import LmsFormat, Named, Peek, Reading, Sheet, Student
from grader.records import IntegrityNote, LmsIdentity

# a folder: the name runs to the last " - " (a name may hold one; the date never does)
_FOLDER = re.compile(r"^(?P<submission>\d+)-(?P<user>\d+) - (?P<name>.+) - (?P<date>.+)$")
_DATE = r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{3,4} [AP]M"
_FILE = re.compile(rf"^(?P<submission>\d+)-(?P<user>\d+) - (?P<name>.+?) ?- (?P<date>{_DATE}) - (?P<original>.+)$")
IDENTITY = ("OrgDefinedId", "Username")
END = "End-of-Line Indicator"
OVERVIEW = "index.html"


class Brightspace(LmsFormat):
    name = "brightspace"
    title = "Brightspace"

    def read(self, entries: Sequence[Named], peek: Peek | None = None) -> Reading | None:
        folders = [e for e in entries if e.kind == "folder"]
        files = [e for e in entries if e.kind != "folder" and e.name != OVERVIEW]
        if folders and not files and all(_FOLDER.match(e.name) for e in folders):
            found = [(_FOLDER.match(e.name), e.name) for e in folders]
            prefixes = {e.name: len(e.name) for e in folders}
        elif files and not folders and all(_FILE.match(e.name) for e in files):
            found = [(_FILE.match(e.name), e.name) for e in files]
            prefixes = {name: m.start("original") for m, name in found if m}
        else:
            return None
        by_user: dict[str, dict[int, list[tuple[re.Match, str]]]] = {}
        for match, name in found:
            assert match is not None
            by_user.setdefault(match["user"], {}).setdefault(int(match["submission"]), []).append((match, name))
        if any(e.name == OVERVIEW for e in entries):
            prefixes[OVERVIEW] = len(OVERVIEW)  # Brightspace's own
        return Reading([self._student(user, found) for user, found in sorted(by_user.items())], prefixes)

    def _student(self, user: str, submissions: dict[int, list[tuple[re.Match, str]]]) -> Student:
        latest = submissions[max(submissions)]
        full = latest[0][0]["name"]
        notes: tuple[IntegrityNote, ...] = ()
        if len(submissions) > 1:
            dates = ", ".join(found[0][0]["date"] for _, found in sorted(submissions.items()))
            notes = (IntegrityNote("attempts", f"{latest[0][0]['date']} ({dates})"),)
        who = LmsIdentity(self.name, user, full)
        if "original" in latest[0][0].groupdict():
            files = tuple(sorted((m["original"], name) for m, name in latest))
            return Student(f"{full}_{user}", who, files=files, again=notes)
        return Student(f"{full}_{user}", who, tuple(sorted(name for _, name in latest)), again=notes)

    def grade_titles(self, titles: list[tuple[str, float]], by: str, sheet: Sheet) -> list[str]:
        return [f"{title} Points Grade <Numeric MaxPoints:{points:g}>" for title, points in titles]

    def needs_roster(self) -> bool:
        return True

    def roster_name(self, row: dict[str, str]) -> str | None:
        return f"{row.get('First Name', '').strip()} {row.get('Last Name', '').strip()}".strip()

    def download_sheet(self) -> Sheet:
        return Sheet(IDENTITY, IDENTITY[0], after=(END,))

    def download_row(self, who: LmsIdentity, modified: str) -> tuple[list[str], list[str]]:
        raise ValueError("Brightspace's import needs the roster's identifiers")  # see needs_roster

    def roster_sheet(self, header: list[str], key: str) -> Sheet:
        return Sheet(IDENTITY, IDENTITY[0] if IDENTITY[0] in header else IDENTITY[1], after=(END,))

    def name_sheet(self) -> Sheet:
        return Sheet(IDENTITY, IDENTITY[1], after=(END,))

    def name_row(self, name: str) -> tuple[list[str], list[str]]:
        return ["", name], ["#"]

    def after_cells(self, sheet: Sheet) -> list[str]:
        return ["#"]

    def next_step(self, sheet: Sheet) -> tuple[str, dict[str, str]]:
        return "export-brightspace-next", {}
