"""What every LMS format implements: reading its bulk download, and writing the grade import it takes.

A format is one module of this package (canvas.py, moodle.py, blackboard.py, brightspace.py), one
`LmsFormat` registered in `grader.lms.FORMATS`, with its messages in the catalogues
(found.identity-<name>, found.late-<name>, deploy.cli.export-<name>-next...). It says:

- which names of a download's top level are its own, and whose each is (`read`): the students, each
  with the LMS's identity (`grader.records.LmsIdentity`) taken from the part of a name the LMS
  writes, read from the left, never from the file name the student chose; and how long the LMS's
  part of each name is, so that of two formats that read one download, the one whose part is the
  shorter in every name is believed (the other took part of a student's file name for its own);
- the grade import (`download_sheet`, `download_row`: from the identities of a download;
  `roster_sheet`, `roster_row`: from the LMS's own gradebook export; `name_sheet`, `name_row`: from
  the students' folder names only) and the step the instructor takes next (`next_step`).

The export (grader.classroom.lms_export) writes one row per LMS id, never two, and none for an id
two submissions carry; it makes every cell inert for spreadsheets. Standard library only: the
intake, which the student bundle ships, reads downloads through this package.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from grader.records import IntegrityNote, LmsIdentity

JUNK = {"__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}
CODE_SUFFIXES = (".py", ".ipynb", ".zip")
_AGAIN = re.compile(r"^(?P<stem>.+?)-(?P<n>[1-9]\d*)(?P<suffix>(?:\.[A-Za-z][A-Za-z0-9]*)*\.[A-Za-z0-9]*)$")


Peek = Callable[[str], "bytes | None"]


class Named(Protocol):
    """An entry of a download's top level (grader.intake.files.Entry)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class Student:
    """One student of a bulk download: their name (as the kit names them: `LmsFormat.name_of`), the
    LMS's identity, the folders that are theirs (`folders`: each read as an upload) or their files
    (`files`: the student's file name -> the name in the download), and what the report says about
    how they handed in (`again`: a file uploaded again, an earlier attempt not graded)."""

    name: str
    identity: LmsIdentity
    folders: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    again: tuple[IntegrityNote, ...] = ()


@dataclass(frozen=True)
class Reading:
    """A download as one format reads it: its students, the length of the LMS's own part of each name
    it reads as its own (name -> characters), and whether the names break a rule of the LMS's own
    (`doubtful`: two files of one Canvas file id): another LMS's reading, if any, is believed first."""

    students: list[Student]
    prefixes: dict[str, int] = field(default_factory=dict)
    doubtful: bool = False


@dataclass(frozen=True)
class Sheet:
    """The columns of a grade import: identity columns first, then one column per grade (titles from
    `grade_titles`), then `after` (e.g. an end-of-line marker); a points-possible row labelled
    `points_row` under the header when the LMS reads one; `identity_column` is the column that
    tells the LMS who a row is (said to the instructor)."""

    identity: tuple[str, ...]
    identity_column: str
    points_row: str = ""
    after: tuple[str, ...] = ()
    roster_columns: tuple[str, ...] = ()  # the roster's header, where a grade column may be found


class LmsFormat:
    """One LMS (see the module's docstring). Subclasses set `name` (the CLI's word) and `title`."""

    name = ""
    title = ""

    # -- the download -------------------------------------------------------------------------

    def read(self, entries: Sequence[Named], peek: Peek | None = None) -> Reading | None:
        """The students of a download's top level (junk and hidden names already left out), or None
        when some name that could hold code is not this LMS's. `peek` reads a small file of that
        level (None when it cannot be read): what the LMS writes beside the students' files."""
        raise NotImplementedError

    # -- the grade import ---------------------------------------------------------------------------

    def grade_titles(self, titles: list[tuple[str, float]], by: str, sheet: Sheet) -> list[str]:
        """The grade columns' headers, from (title, points possible) (`by`: assignment or section)."""
        return [title for title, _ in titles]

    def needs_roster(self) -> bool:
        """True when the LMS's import cannot identify a student by what its download carries."""
        return False

    def roster_name(self, row: dict[str, str]) -> str | None:
        """The student's name as the download writes it, from a roster row (None: rosters are
        matched by the column that holds the folder names)."""
        return None

    def download_sheet(self) -> Sheet:
        raise NotImplementedError

    def download_row(self, who: LmsIdentity, modified: str) -> tuple[list[str], list[str]]:
        """(identity cells, cells after the grades) of a student of this LMS's download."""
        raise NotImplementedError

    def roster_sheet(self, header: list[str], key: str) -> Sheet:
        """The columns copied from a roster (the LMS's gradebook export) whose column KEY holds the
        students' folder names."""
        raise NotImplementedError

    def roster_row(self, row: dict[str, str], name: str, sheet: Sheet) -> tuple[list[str], list[str]]:
        values = [row.get(column, "") for column in sheet.identity]
        return values, self.after_cells(sheet)

    def name_sheet(self) -> Sheet:
        """The columns when students are known only by their folder names."""
        raise NotImplementedError

    def name_row(self, name: str) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def after_cells(self, sheet: Sheet) -> list[str]:
        return ["" for _ in sheet.after]

    def next_step(self, sheet: Sheet) -> tuple[str, dict[str, str]]:
        """The message (deploy.cli.<key>) that says how to import the file, and its parameters."""
        raise NotImplementedError


# -- shared by the formats ----------------------------------------------------------------------------


def is_code(name: str) -> bool:
    return name.lower().endswith(CODE_SUFFIXES)


def latest(uploads: list[tuple[str, str, str]]) -> tuple[tuple[tuple[str, str], ...], tuple[IntegrityNote, ...]]:
    """Of (order, the student's file name, the name in the download) for one student, the latest
    upload of each name: (student's name -> name in the download) and a "reuploaded" note for each
    name uploaded more than once. A name the LMS numbered as uploaded again (``ch3-1.ipynb``) is the
    same file as ``ch3.ipynb``; `order` sorts uploads oldest first (a file id, a date)."""
    by_base: dict[str, list[tuple[str, str, str]]] = {}
    for order, original, entry in uploads:
        again = _AGAIN.match(original)
        base = again["stem"] + again["suffix"] if again else original
        by_base.setdefault(base, []).append((order, original, entry))
    chosen, notes = [], []
    for base, versions in sorted(by_base.items()):
        versions.sort()
        chosen.append((base, versions[-1][2]))
        if len(versions) > 1:
            listed = ", ".join(original for _, original, _ in versions)
            notes.append(IntegrityNote("reuploaded", f"{versions[-1][1]} ({listed})"))
    return tuple(chosen), tuple(notes)


def number_order(digits: str) -> str:
    """A number as text that sorts as the number does."""
    return digits.rjust(40, "0")
