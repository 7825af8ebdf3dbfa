"""What `grade export` reads: an output folder of `grade` (one results.json per student) and a
roster (the LMS's own gradebook export, or any CSV with a column of the students' folder names).

A student is the `submission` of a results.json (the name as `grade` shows it: escapes read back
with grader.intake.names.raw_name), in the folder its `folder` field names: a results.json whose
`folder` is another folder's (a report copied or moved) is left out as unusable. With a roster, a
student is matched to the one row whose key column holds their folder's name (or, for an LMS
whose import needs the roster's identifiers, `LmsFormat.roster_name`); a student whom two or more
rows match (two students of one name) is left out and named, never given to one of them.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from grader.intake.names import raw_name, shown_name
from grader.lms import LmsFormat
from grader.lms.canvas import POINTS_ROW
from grader.records import LmsIdentity
from grader.report.results_file import read_results

MAX_ROSTER_BYTES = 16 * 1024**2


class ExportError(Exception):
    """The export cannot be made (no results, a bad roster, a bad target). Carries a message-catalogue
    key (export.error.<key>) and its parameters."""

    def __init__(self, key: str, **params: object):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass
class StudentGrades:
    name: str  # as shown (results.json's "submission")
    score: float
    max_score: float
    sections: dict[str, tuple[float, float]]  # section id -> (score, max)
    folder: str = ""  # the folder of the student's reports, as listed ("" for one submission's)
    identity: LmsIdentity | None = None  # who the LMS's bulk download says they are

    @property
    def raw(self) -> str:
        """The name as the student's folder had it: what an LMS knows them by."""
        return raw_name(self.name)

    @property
    def listed(self) -> str:
        """The name with its folder where the two differ (to find a student left out)."""
        return self.name if self.folder in ("", self.raw) else f"{self.name} ({shown_name(self.folder)})"


# -- reading an output folder -------------------------------------------------------------------


def _grades(folder_path: Path, folder_name: str, folder: str | None = None) -> StudentGrades | None:
    """The grades of the results.json in FOLDER_PATH (FOLDER None: one submission's, in the output
    folder itself); None when it is missing, unusable or written for another student's folder."""
    result = read_results(folder_path)
    if result is None or folder is not None and result.folder is not None and result.folder != folder:
        return None
    sections = {section.id: (section.score, section.max_score) for section in result.sections}
    return StudentGrades(
        result.submission if result.submission.strip() else folder_name,
        result.score,
        result.max_score,
        sections,
        folder or "",
        result.intake.identity,
    )


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_output(out_dir: Path) -> tuple[list[StudentGrades], list[str]]:
    """(the graded students, the folders whose results.json is missing or unusable) of an output
    folder: one submission (results.json in it) or a class (one folder per student)."""
    try:
        if not stat.S_ISDIR(os.lstat(out_dir).st_mode):
            raise ExportError("not-a-folder", path=out_dir)
    except OSError:
        raise ExportError("missing", path=out_dir) from None
    if _is_file(out_dir / "results.json"):  # one submission's reports (a student *folder* named so is a class)
        grades = _grades(out_dir, out_dir.name)
        return ([grades], []) if grades else ([], [out_dir.name])
    students, unreadable = [], []
    with os.scandir(out_dir) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            name = shown_name(entry.name)
            grades = _grades(Path(entry.path), name, entry.name)
            if grades:
                students.append(grades)
            else:
                unreadable.append(name)
    if not students:
        raise ExportError("no-results", path=out_dir)
    return students, unreadable


# -- a roster (an LMS's own export, or any CSV with a column of the folder names) ----------------


def key_of(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().casefold()


def read_roster(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a roster CSV (UTF-8, with or without BOM; comma or semicolon separated).
    Canvas's "Points Possible" row and its muted/posting rows are skipped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportError("roster-unreadable", path=path, reason=exc.strerror or exc) from None
    if len(data) > MAX_ROSTER_BYTES:
        raise ExportError("roster-too-large", path=path, megabytes=MAX_ROSTER_BYTES // 1024**2)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExportError("roster-not-utf8", path=path) from None
    first = text.split("\n", 1)[0]
    dialect = "excel" if first.count(",") >= first.count(";") else _Semicolon
    reader = csv.reader(io.StringIO(text), dialect)
    header = [cell.strip() for cell in next(reader, [])]
    if not any(header):
        raise ExportError("roster-no-header", path=path)
    rows = []
    for cells in reader:
        if not any(c.strip() for c in cells) or POINTS_ROW in (cells[0] if cells else ""):
            continue
        if all(c.strip().lower() in ("", "muted") or c.strip().lower().startswith("manual posting") for c in cells):
            continue
        rows.append({column: (cells[i].strip() if i < len(cells) else "") for i, column in enumerate(header)})
    return header, rows


class _Semicolon(csv.excel):
    delimiter = ";"


def match_by_lms_name(
    students: list[StudentGrades], rows: list[dict[str, str]], lms: LmsFormat
) -> tuple[dict[str, dict[str, str]], list[StudentGrades]]:
    """(student name -> roster row, the students that several rows match) for students of LMS's
    download, by the name the download writes (`LmsFormat.roster_name`); as `match_roster`, a name
    two rows have gets neither."""
    by_name: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_name.setdefault(key_of(lms.roster_name(row) or ""), []).append(row)
    keys = {s.name: key_of(s.identity.name if s.identity else s.raw) for s in students}
    matched = {s.name: by_name[keys[s.name]][0] for s in students if len(by_name.get(keys[s.name], ())) == 1}
    return matched, [s for s in students if len(by_name.get(keys[s.name], ())) > 1]


def match_roster(
    students: list[StudentGrades], header: list[str], rows: list[dict[str, str]], key: str | None
) -> tuple[str, dict[str, dict[str, str]], list[StudentGrades]]:
    """(the roster column that holds the students' folder names, student name -> roster row, the
    students that several rows match). Without KEY, the column that matches the most names is used.
    A student whom two or more rows match (two students of one name) gets no row: whose grade it is
    cannot be known from the name, and guessing would give one student another's grade."""
    exact = {unicodedata.normalize("NFC", s.raw).strip() for s in students}
    names = {key_of(s.raw) for s in students}
    if key is not None:
        if key not in header:
            raise ExportError("roster-no-column", column=key, columns=", ".join(header))
        candidates = [key]
    else:
        candidates = [column for column in header if column]
    best, best_count = None, (0, 0)
    for column in candidates:
        values = [row[column] for row in rows if row.get(column)]
        count = (
            len(exact & {unicodedata.normalize("NFC", v).strip() for v in values}),  # exact matches first
            len(names & {key_of(v) for v in values}),
        )
        if count[1] and count > best_count:
            best, best_count = column, count
    if best is None:
        raise ExportError("roster-key-matches-none" if key else "roster-no-key", column=key)
    by_key: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_key.setdefault(key_of(row.get(best, "")), []).append(row)
    matched = {s.name: by_key[key_of(s.raw)][0] for s in students if len(by_key.get(key_of(s.raw), ())) == 1}
    several = [s for s in students if len(by_key.get(key_of(s.raw), ())) > 1]
    return best, matched, several
