"""`grade export REPORTS --lms canvas|moodle|blackboard|brightspace`: a grade import the LMS takes,
made from an output folder of `grade` (its results.json files), without grading anything again.

What each LMS's import looks like, and the step the instructor takes next, is its module's in
`grader.lms` (one `LmsFormat` each): this module reads the output folder, matches the students to a
roster, and writes the rows the format gives, with the same guarantees for every LMS.

Every text cell (names, titles) is neutralised for spreadsheets (see textsafe.spreadsheet_cell).
What is read (the output folder, a roster) and how students are matched: grader.classroom.lms_roster.

A class graded from the LMS's own bulk download keeps each student's LMS identity (results.json's
`lms`): without a roster, the export fills the LMS's id columns from it (an LMS whose import needs
identifiers its download does not carry, Brightspace, needs `--roster`, matched by the name the
download writes). One row per LMS id, never two: submissions that carry one id get no row, and are
named (issue 36).
"""

from __future__ import annotations

import csv
import io
import os
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.classroom.lms_roster import (
    ExportError,
    StudentGrades,
    key_of,
    match_by_lms_name,
    match_roster,
    read_output,
    read_roster,
)
from grader.i18n import Catalog, section_key
from grader.lms import FORMATS, NAMES, LmsFormat, Sheet
from grader.records import SECTIONS, LmsIdentity
from grader.report.textsafe import spreadsheet_cell

__all__ = ["GROUPINGS", "LMS", "Export", "ExportError", "StudentGrades", "export", "read_output", "read_roster"]
LMS = NAMES
GROUPINGS = ("assignment", "section")
MAX_NAME = 255


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
    sheet: Sheet | None = None  # the columns written
    no_lms_id: list[str] = field(default_factory=list)  # graded students without an id of the LMS's download
    same_lms_id: list[str] = field(default_factory=list)  # submissions that carry one LMS id: none gets a row


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
    if lms not in FORMATS or by not in GROUPINGS:
        raise ValueError(f"unknown LMS {lms!r} or grouping {by!r}")
    if not assignment.strip():
        raise ExportError("empty-title")
    form = FORMATS[lms]
    students, unreadable = read_output(out_dir)
    # names an LMS would take for one student (case, Unicode form, spaces): neither grade may
    # overwrite the other, so both are left out and named
    keys = Counter(key_of(s.raw) for s in students)
    ambiguous = sorted(s.listed for s in students if keys[key_of(s.raw)] > 1)
    students = [s for s in students if keys[key_of(s.raw)] == 1]
    target = to if to is not None else out_dir / f"{lms}-grades.csv"
    if os.path.isdir(target) or (os.path.lexists(target) and not os.path.isfile(target)):
        raise ExportError("target-is-folder", path=target)
    report = Export(target, 0, [], unreadable, ambiguous=ambiguous)
    from_download = any(s.identity is not None and s.identity.lms == lms for s in students)
    if roster is None and from_download and not form.needs_roster():
        return _with_lms_ids(students, report, form, by=by, assignment=assignment, catalog=catalog)
    if roster is None and from_download:
        raise ExportError("needs-roster", lms=form.title)
    if roster is None:
        sheet = form.name_sheet()
        rows = [(s, *form.name_row(s.name)) for s in students]
    else:
        rows, sheet = _roster_rows(students, report, form, roster, roster_key, from_download)
    report.identity_column, report.sheet = sheet.identity_column, sheet
    report.columns = _columns([s for s, _, _ in rows], by, assignment, catalog) if rows else []
    for student, values, _ in rows:
        # what the LMS knows: the roster's text, or the student's name as their folder had it
        known = [student.raw if v == student.name else v for v in values]
        if any(_name(v) != unicodedata.normalize("NFC", k) for k, v in zip(known, values) if v):
            report.altered_ids.append(student.name)
    return _write_sheet(report, form, sheet, by, sorted(rows, key=lambda r: (key_of(r[0].raw), r[0].name)))


def _roster_rows(
    students: list[StudentGrades],
    report: Export,
    form: LmsFormat,
    roster: Path,
    roster_key: str | None,
    from_download: bool,
) -> tuple[list[tuple[StudentGrades, list[str], list[str]]], Sheet]:
    """(student, identity cells, cells after the grades) of every student the roster lists once."""
    header, rows = read_roster(roster)
    if from_download and form.needs_roster():
        key = ""
        known = [s for s in students if s.identity is not None and s.identity.lms == form.name]
        report.no_lms_id = sorted(s.name for s in students if s not in known)
        matched, several = match_by_lms_name(known, rows, form)
        students = known
        named = {key_of(s.identity.name) for s in known if s.identity}
        report.not_submitted = [n for r in rows if (n := form.roster_name(r) or "") and key_of(n) not in named]
    else:
        key, matched, several = match_roster(students, header, rows, roster_key)
        graded = {key_of(s.raw) for s in students}
        report.not_submitted = [r[key] for r in rows if r.get(key) and key_of(r[key]) not in graded]
    report.ambiguous_rows = sorted(s.listed for s in several)
    report.unmatched = [s.name for s in students if s.name not in matched and s not in several]
    sheet = form.roster_sheet(header, key)
    out = [(s, *form.roster_row(matched[s.name], s.name, sheet)) for s in students if s.name in matched]
    return out, sheet


def _write_sheet(
    report: Export, form: LmsFormat, sheet: Sheet, by: str, rows: list[tuple[StudentGrades, list[str], list[str]]]
) -> Export:
    titles = [_name(t) for t in form.grade_titles(report.columns, by, sheet)]
    lines: list[list[str]] = [[*sheet.identity, *titles, *sheet.after]]
    if sheet.points_row:
        lines.append([sheet.points_row, *[""] * (len(sheet.identity) - 1), *(_num(p) for _, p in report.columns)])
    for student, values, after in rows:
        lines.append([*(_name(v) if v else "" for v in values), *_cells(student, by), *after])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(lines)
    _write(report.path, buffer.getvalue())
    report.rows = len(rows)
    return report


def _with_lms_ids(
    students: list[StudentGrades], report: Export, form: LmsFormat, *, by: str, assignment: str, catalog: Catalog
) -> Export:
    """The export of a class graded from the LMS's bulk download: its ids, without a roster. A student
    without an id of this LMS (not in the download) is left out, and named; so is every submission
    of an id that another submission carries too."""
    known = [s for s in students if s.identity is not None and s.identity.lms == form.name]
    report.no_lms_id = sorted(s.name for s in students if s not in known)
    known, report.same_lms_id = _one_per_id(known)
    sheet = form.download_sheet()
    report.identity_column, report.sheet = sheet.identity_column, sheet
    report.columns = _columns(known, by, assignment, catalog) if known else []
    modified = time.strftime("%Y-%m-%d %H:%M:%S")
    rows = []
    for student in sorted(known, key=lambda s: (key_of(_identity(s).user_id), s.name)):
        values, after = form.download_row(_identity(student), modified)
        rows.append((student, values, after))
    return _write_sheet(report, form, sheet, by, rows)


def _identity(student: StudentGrades) -> LmsIdentity:
    assert student.identity is not None
    return student.identity


def _one_per_id(students: list[StudentGrades]) -> tuple[list[StudentGrades], list[str]]:
    """(the students whose LMS id no other submission carries, each other id with the submissions
    that carry it). A download the LMS wrote gives each id to one submission; two with one id (a
    merged or altered download) get no row: a row for the id would give one student the other's
    grade, or two rows, of which the LMS keeps whichever it reads last."""
    by_id: dict[str, list[StudentGrades]] = {}
    for student in students:
        assert student.identity is not None
        by_id.setdefault(student.identity.user_id, []).append(student)
    single = [found[0] for found in by_id.values() if len(found) == 1]
    several = [
        f"{user_id}: {' / '.join(sorted(s.listed for s in found))}"
        for user_id, found in sorted(by_id.items())
        if len(found) > 1
    ]
    return single, several


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
