"""`grade export REPORTS --lms canvas|moodle`: a gradebook CSV that Canvas or Moodle imports, made
from an output folder of `grade` (its results.json files), without grading anything again.

Canvas (its gradebook importer, instructure/canvas-lms app/models/gradebook_importer.rb): the header
starts with "Student" and "ID", then "SIS User ID" and "SIS Login ID", then "Section"; every further
column is an assignment (an existing one is matched by "Title (id)" or its title, any other title
creates one); a row whose first cell contains "Points Possible" gives the points of each assignment;
a student is matched by ID (Canvas's own number), else SIS User ID, else SIS Login ID, else name; a
blank grade changes nothing. Columns named like "Current Score" or "Final Grade" are ignored, so the
kit never writes a total beside per-section columns.

Moodle (Grades > Import > CSV file, grade/import/csv): a header, then one row per student; at import
the teacher maps one column to the users' username, ID number, email address or id ("Map from" /
"Map to") and each grade column to a grade item or a new one. No points-possible row: a row whose
identifier matches no user stops the whole import. The maximum is the grade item's (100 for a new
item; grades above it are refused unless the site allows unlimited grades).

Every text cell (names, titles) is neutralised for spreadsheets (see textsafe.spreadsheet_cell).

A student is the `submission` of a results.json (the name as `grade` shows it: escapes read back
with grader.intake.names.raw_name), in the folder its `folder` field names: a results.json whose
`folder` is another folder's (a report copied or moved) is left out as unusable.

A class graded from the LMS's own bulk download keeps each student's LMS identity (results.json's
`lms`): without a roster, the export fills the LMS's id columns from it. Canvas: "ID" is the user id
of the download's file names. Moodle: the download's number is the assignment's participant id,
which only the assignment's grading worksheet takes (mod/assign/feedback/offline, "Upload grading
worksheet": columns "Identifier" = "Participant <id>", "Grade", "Last modified (grade)"): the
export is written in that form, one grade per student (with `--by section` the section columns come
instead of "Grade", for a spreadsheet; the worksheet takes only "Grade").

With a roster, a student is matched to the one row whose key column holds their folder's name; a
student whom two or more rows match (two students of one name) is left out and named, never given
to one of them.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.i18n import Catalog, section_key
from grader.intake.names import raw_name, shown_name
from grader.records import SECTIONS, LmsIdentity
from grader.report.results_file import read_results
from grader.report.textsafe import spreadsheet_cell

LMS = ("canvas", "moodle")
GROUPINGS = ("assignment", "section")
MAX_ROSTER_BYTES = 16 * 1024**2
MAX_NAME = 255
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_IDENTITY = ("First name", "Last name", "Username", "ID number", "Email address")
# the assignment's grading worksheet (mod/assign/feedback/offline/importgradeslib.php reads these)
MOODLE_WORKSHEET = ("Identifier", "Full name")
MOODLE_PARTICIPANT = "Participant "
MOODLE_GRADE = "Grade"
MOODLE_MODIFIED = "Last modified (grade)"


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


@dataclass
class Export:
    path: Path
    rows: int
    columns: list[tuple[str, float]]  # (title, points possible)
    unreadable: list[str] = field(default_factory=list)  # output folders without a usable results.json
    unmatched: list[str] = field(default_factory=list)  # graded students the roster does not list
    not_submitted: list[str] = field(default_factory=list)  # roster rows with no graded submission
    altered_ids: list[str] = field(default_factory=list)  # identifiers changed to stay inert in spreadsheets
    ambiguous: list[str] = field(default_factory=list)  # students an LMS could not tell apart (Alice, alice)
    ambiguous_rows: list[str] = field(default_factory=list)  # students several roster rows match (two 王伟)
    identity_column: str = ""  # the column that identifies a student (what Moodle maps from)
    no_lms_id: list[str] = field(default_factory=list)  # graded students without an id of the LMS's download


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


def _key(text: str) -> str:
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
        if not any(c.strip() for c in cells) or CANVAS_POINTS_ROW in (cells[0] if cells else ""):
            continue
        if all(c.strip().lower() in ("", "muted") or c.strip().lower().startswith("manual posting") for c in cells):
            continue
        rows.append({column: (cells[i].strip() if i < len(cells) else "") for i, column in enumerate(header)})
    return header, rows


class _Semicolon(csv.excel):
    delimiter = ";"


def match_roster(
    students: list[StudentGrades], header: list[str], rows: list[dict[str, str]], key: str | None
) -> tuple[str, dict[str, dict[str, str]], list[StudentGrades]]:
    """(the roster column that holds the students' folder names, student name -> roster row, the
    students that several rows match). Without KEY, the column that matches the most names is used.
    A student whom two or more rows match (two students of one name) gets no row: whose grade it is
    cannot be known from the name, and guessing would give one student another's grade."""
    exact = {unicodedata.normalize("NFC", s.raw).strip() for s in students}
    names = {_key(s.raw) for s in students}
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
            len(names & {_key(v) for v in values}),
        )
        if count[1] and count > best_count:
            best, best_count = column, count
    if best is None:
        raise ExportError("roster-key-matches-none" if key else "roster-no-key", column=key)
    by_key: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_key.setdefault(_key(row.get(best, "")), []).append(row)
    matched = {s.name: by_key[_key(s.raw)][0] for s in students if len(by_key.get(_key(s.raw), ())) == 1}
    several = [s for s in students if len(by_key.get(_key(s.raw), ())) > 1]
    return best, matched, several


# -- writing ---------------------------------------------------------------------------------------


def _columns(students: list[StudentGrades], by: str, assignment: str, catalog: Catalog) -> list[tuple[str, float]]:
    if by == "assignment":
        return [(assignment, max(s.max_score for s in students))]
    return [
        (
            catalog.t("export.section-column", assignment=assignment, section=catalog.t(section_key(section))),
            max((s.sections.get(section, (0.0, 0.0))[1] for s in students), default=0.0),
        )
        for section in SECTIONS
    ]


def _cells(student: StudentGrades, by: str) -> list[str]:
    if by == "assignment":
        return [_num(student.score)]
    return [_num(student.sections[s][0]) if s in student.sections else "" for s in SECTIONS]


def _num(value: float) -> str:
    return f"{round(value, 4):g}"


def _name(text: str) -> str:
    cell = spreadsheet_cell(unicodedata.normalize("NFC", text))
    return cell if len(cell) <= MAX_NAME else cell[: MAX_NAME - 1] + "…"


def export(
    out_dir: Path,
    *,
    lms: str,
    by: str = "assignment",
    assignment: str,
    catalog: Catalog,
    roster: Path | None = None,
    roster_key: str | None = None,
    to: Path | None = None,
) -> Export:
    """Write the CSV (default: OUT_DIR/<lms>-grades.csv) and say what it holds and what was left out."""
    if lms not in LMS or by not in GROUPINGS:
        raise ValueError(f"unknown LMS {lms!r} or grouping {by!r}")
    if not assignment.strip():
        raise ExportError("empty-title")
    students, unreadable = read_output(out_dir)
    # names an LMS would take for one student (case, Unicode form, spaces): neither grade may
    # overwrite the other, so both are left out and named
    keys = Counter(_key(s.raw) for s in students)
    ambiguous = sorted(s.listed for s in students if keys[_key(s.raw)] > 1)
    students = [s for s in students if keys[_key(s.raw)] == 1]
    target = to if to is not None else out_dir / f"{lms}-grades.csv"
    if os.path.isdir(target) or (os.path.lexists(target) and not os.path.isfile(target)):
        raise ExportError("target-is-folder", path=target)
    matched: dict[str, dict[str, str]] | None = None
    report = Export(target, 0, [], unreadable, ambiguous=ambiguous)
    if roster is not None:
        header, rows = read_roster(roster)
        key, matched, several = match_roster(students, header, rows, roster_key)
        report.ambiguous_rows = sorted(s.listed for s in several)
        report.unmatched = [s.name for s in students if s.name not in matched and s not in several]
        graded = {_key(s.raw) for s in students}
        report.not_submitted = [r[key] for r in rows if r.get(key) and _key(r[key]) not in graded]
        students = [s for s in students if s.name in matched]
        identity = CANVAS_IDENTITY if lms == "canvas" else tuple(c for c in MOODLE_IDENTITY if c in header) or (key,)
        report.identity_column = (
            key
            if key in identity
            else next((c for c in ("Username", "ID number", "Email address") if c in identity), identity[0])
        )
    elif any(s.identity is not None and s.identity.lms == lms for s in students):
        return _with_lms_ids(students, report, lms=lms, by=by, assignment=assignment, catalog=catalog)
    else:
        identity = CANVAS_IDENTITY if lms == "canvas" else ("Student",)
        report.identity_column = "SIS Login ID" if lms == "canvas" else "Student"
    report.columns = _columns(students, by, assignment, catalog) if students else []
    lines: list[list[str]] = [[*identity, *(_name(title) for title, _ in report.columns)]]
    if lms == "canvas":
        lines.append([CANVAS_POINTS_ROW, *[""] * (len(identity) - 1), *(_num(p) for _, p in report.columns)])
    for student in sorted(students, key=lambda s: (_key(s.raw), s.name)):
        if matched is not None:
            values = [matched[student.name].get(column, "") for column in identity]
            if lms == "canvas" and not any(values[1:4]):
                values[3] = student.name  # no Canvas id in the roster: match by login
        else:
            values = [student.name, "", "", student.name, ""] if lms == "canvas" else [student.name]
        cells = [_name(v) if v else "" for v in values]
        # what the LMS knows: the roster's text, or the student's name as their folder had it
        known = [student.raw if v == student.name else v for v in values]
        if any(cell != unicodedata.normalize("NFC", k) for cell, k, v in zip(cells, known, values) if v):
            report.altered_ids.append(student.name)
        lines.append([*cells, *_cells(student, by)])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(lines)
    _write(target, buffer.getvalue())
    report.rows = len(students)
    return report


def _with_lms_ids(
    students: list[StudentGrades], report: Export, *, lms: str, by: str, assignment: str, catalog: Catalog
) -> Export:
    """The export of a class graded from the LMS's bulk download: its ids, without a roster. A student
    without an id of this LMS (not in the download) is left out, and named."""
    known = [s for s in students if s.identity is not None and s.identity.lms == lms]
    report.no_lms_id = sorted(s.name for s in students if s not in known)
    report.columns = _columns(known, by, assignment, catalog) if known else []
    titles = [_name(title) for title, _ in report.columns]
    if lms == "canvas":
        report.identity_column = "ID"
        lines = [[*CANVAS_IDENTITY, *titles]]
        lines.append([CANVAS_POINTS_ROW, *[""] * (len(CANVAS_IDENTITY) - 1), *(_num(p) for _, p in report.columns)])
    else:
        report.identity_column = MOODLE_WORKSHEET[0]
        if by == "assignment":
            titles = [MOODLE_GRADE]
        lines = [[*MOODLE_WORKSHEET, *titles, MOODLE_MODIFIED]]
    modified = time.strftime("%Y-%m-%d %H:%M:%S")
    for student in sorted(known, key=lambda s: (_key(s.identity.user_id if s.identity else ""), s.name)):
        who = student.identity
        assert who is not None
        if lms == "canvas":
            number = who.user_id if who.user_id.isdigit() else ""
            values = [_name(who.name), number, "", "" if number else _name(who.name), ""]
            lines.append([*values, *_cells(student, by)])
        else:
            values = [_name(MOODLE_PARTICIPANT + who.user_id), _name(who.name)]
            lines.append([*values, *_cells(student, by), modified])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(lines)
    _write(report.path, buffer.getvalue())
    report.rows = len(known)
    return report


def _write(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a link at PATH is replaced, never followed."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
