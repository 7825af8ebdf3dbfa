"""`grade export`: gradebook CSVs for Canvas and Moodle, made from an output folder of `grade`
without grading anything again.

Each CSV is read back the way the LMS reads it: `canvas_import` follows Canvas's gradebook importer
(instructure/canvas-lms, app/models/gradebook_importer.rb: header detection, student columns, the
"Points Possible" row, ignored total columns), `moodle_import` Moodle's CSV grade import
(grade/import/csv: a header, one row per user identified by the mapped column, a row whose
identifier matches no user stops the import, grades above the item's maximum are refused).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.classroom.lms_export import ExportError, export
from grader.i18n import Catalog, section_key
from grader.records import SECTIONS
from grader.report.textsafe import FORMULA_STARTS, spreadsheet_cell
from grader.run import grade
from tests.conftest import ROOT

EN = Catalog("en")
TITLE = "Chapter 3 attention"
NON_ASSIGNMENT = re.compile(
    "Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
    "Override Score|Override Grade|Override Status"
)


def canvas_import(text: str) -> tuple[dict[str, float], list[dict]]:
    """(assignment title -> points possible, students) as Canvas's GradebookImporter reads the CSV."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    columns = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        columns += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        columns += 2
    assert "Section" in header[columns - 1], "Canvas: Invalid header row"
    titles = [title for title in header[columns:] if not NON_ASSIGNMENT.search(title)]
    assert len(titles) == len(header) - columns, "a column Canvas would drop"
    points: dict[str, float] = {}
    students = []
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            points = {title: float(row[columns + i]) for i, title in enumerate(titles)}
            continue
        assert any(row[:columns]), "a row with nothing to identify a student"
        students.append(
            {
                "student": row[0],
                "id": row[1],
                "login": row[columns - 2] if columns == 5 else "",
                "sis": row[2] if columns == 5 else "",
                "section": row[columns - 1],
                "grades": {
                    title: (float(row[columns + i]) if row[columns + i] else None) for i, title in enumerate(titles)
                },
            }
        )
    assert set(points) == set(titles), "the Points Possible row gives every assignment's points"
    return points, students


def moodle_import(text: str, map_from: str, grade_max: float = 100.0) -> list[dict]:
    """The rows as Moodle's CSV import maps them: MAP_FROM identifies the user, every other column
    is a grade (blank: no grade)."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert len(set(header)) == len(header) and map_from in header
    users = []
    for row in rows[1:]:
        assert len(row) == len(header)
        record = dict(zip(header, row))
        assert record[map_from].strip(), "Moodle skips a row without an identifier"
        grades = {}
        for column, value in record.items():
            if column in (map_from, "First name", "Last name", "ID number", "Email address", "Username"):
                continue
            grades[column] = float(value) if value.strip() not in ("", "-") else None
            assert grades[column] is None or 0 <= grades[column] <= grade_max
        users.append({"id": record[map_from], "grades": grades})
    return users


@pytest.fixture(scope="module")
def class_output(tmp_path_factory):
    """The example class graded once, the real way; every test below only reads it."""
    out = tmp_path_factory.mktemp("export") / "reports"
    grade(ROOT / "examples" / "class", out, jobs=2, force=True)
    documents = {
        d.name: json.loads((d / "results.json").read_text()) for d in out.iterdir() if (d / "results.json").exists()
    }
    return out, documents


def test_canvas_one_column_for_the_assignment(class_output, tmp_path):
    out, documents = class_output
    done = export(out, lms="canvas", assignment=TITLE, catalog=EN, to=tmp_path / "canvas.csv")
    points, students = canvas_import((tmp_path / "canvas.csv").read_text(encoding="utf-8"))
    assert points == {TITLE: 63.0} == dict(done.columns)
    assert {s["login"]: s["grades"][TITLE] for s in students} == {name: d["score"] for name, d in documents.items()}
    assert all(s["student"] == s["login"] and s["id"] == "" for s in students)


def test_canvas_one_column_per_section(class_output, tmp_path):
    out, documents = class_output
    export(out, lms="canvas", by="section", assignment=TITLE, catalog=EN, to=tmp_path / "canvas.csv")
    points, students = canvas_import((tmp_path / "canvas.csv").read_text(encoding="utf-8"))
    titles = [EN.t("export.section-column", assignment=TITLE, section=EN.t(section_key(s))) for s in SECTIONS]
    assert list(points) == titles and sum(points.values()) == 63
    for student in students:
        document = documents[student["login"]]
        by_section = {s["id"]: s["score"] for s in document["sections"]}
        assert [student["grades"][t] for t in titles] == [by_section[s] for s in SECTIONS]
        assert math.isclose(sum(student["grades"].values()), document["score"])


@pytest.mark.parametrize("by", ["assignment", "section"])
def test_moodle_rows_without_a_points_row(class_output, tmp_path, by):
    out, documents = class_output
    done = export(out, lms="moodle", by=by, assignment=TITLE, catalog=EN, to=tmp_path / "moodle.csv")
    users = moodle_import((tmp_path / "moodle.csv").read_text(encoding="utf-8"), done.identity_column)
    assert done.identity_column == "Student"
    assert {u["id"]: sum(u["grades"].values()) for u in users} == {n: d["score"] for n, d in documents.items()}


def test_export_grades_nothing_and_changes_nothing(class_output, tmp_path):
    out, _ = class_output
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    script = (
        "import sys\nfrom grader.cli import main\n"
        f"code = main(['export', {str(out)!r}, '--lms', 'canvas', '--to', {str(tmp_path / 'g.csv')!r}])\n"
        "assert code == 0\n"
        "assert 'torch' not in sys.modules and 'grader.sandbox.pool' not in sys.modules, 'it graded'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "6 students" in done.stdout and "63 points possible" in done.stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


# -- odd names, broken folders, collisions --------------------------------------------------------


def results(name: str | None, score: float, sections: dict[str, float] | None = None) -> str:
    sections = sections or {"3.5": score}
    document = {
        "score": score,
        "max_score": 63.0,
        "tests": [],
        "integrity": [],
        "sections": [{"id": s, "title": s, "score": v, "max_score": 14.0} for s, v in sections.items()],
    }
    if name is not None:
        document["submission"] = name
    return json.dumps(document)


ODD = [
    '=HYPERLINK("http://evil.example","x")',
    "+1 555",
    "-2-3",
    "@SUM(A1:A9)",
    "\tindented",
    "comma, the student",
    'quote "marks"',
    "two\nlines",
    "李雷",
    "Jose\u0301",
    "x" * 300,
    "cr\rreturn",
]


def odd_class(base: Path) -> Path:
    out = base / "odd-reports"
    out.mkdir()
    for i, name in enumerate(ODD):
        folder = name.replace("/", "|") if i % 2 else f"student-{i}"  # the name is in results.json either way
        (out / folder).mkdir()
        (out / folder / "results.json").write_text(results(name, float(i)))
    gbk = os.path.join(os.fsencode(out), "张三".encode("gbk"))  # a folder name that is not UTF-8
    os.mkdir(gbk)
    with open(os.path.join(gbk, b"results.json"), "w") as handle:
        handle.write(results(None, 40.0))
    return out


def inert(cell: str) -> bool:
    """The strict rule: no formula sign (ASCII or full-width) and no whitespace first, one line."""
    return not cell.startswith(FORMULA_STARTS) and not cell[:1].isspace() and "\n" not in cell and "\r" not in cell


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_odd_names_stay_inert_single_line_text(tmp_path, lms):
    out = odd_class(tmp_path)
    done = export(out, lms=lms, assignment=TITLE, catalog=EN, to=tmp_path / "out.csv")
    text = (tmp_path / "out.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == len(ODD) + 1 + (lms == "canvas") + 1
    assert all(inert(cell) for row in rows for cell in row)
    names = {row[0] for row in rows[1:]}
    assert "李雷" in names and "José" in names  # Unicode kept, in NFC
    assert '\'=HYPERLINK("http://evil.example","x")' in names and "'@SUM(A1:A9)" in names
    assert any(name.startswith("\\udc") or "\\xd5" in name for name in names)  # undecodable bytes, escaped
    assert max(len(name) for name in names) <= 255
    assert set(done.altered_ids) >= {ODD[0], ODD[1], ODD[2], ODD[3], "two\nlines"}
    if lms == "canvas":
        canvas_import(text)
    else:
        moodle_import(text, "Student")


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60))
def test_any_text_becomes_an_inert_cell(text):
    cell = spreadsheet_cell(text)
    assert inert(cell)
    cell.encode("utf-8")
    assert next(csv.reader(io.StringIO(_row(cell)))) == [cell]


def _row(cell: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow([cell])
    return buffer.getvalue()


@settings(max_examples=25, deadline=None)
@given(
    name=st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF), min_size=1, max_size=40),
    score=st.integers(0, 63),
)
def test_any_student_name_exports_and_reads_back(name, score):
    with tempfile.TemporaryDirectory() as base:
        out = Path(base) / "reports"
        (out / "s").mkdir(parents=True)
        (out / "s" / "results.json").write_text(results(name, float(score)))
        for lms in ("canvas", "moodle"):
            export(out, lms=lms, assignment=TITLE, catalog=EN, to=Path(base) / f"{lms}.csv")
            text = (Path(base) / f"{lms}.csv").read_text(encoding="utf-8")
            rows = list(csv.reader(io.StringIO(text)))
            assert all(inert(cell) for row in rows for cell in row)
            assert float(rows[-1][-1]) == score


def test_broken_results_are_left_out_and_listed(tmp_path):
    out = tmp_path / "reports"
    for name, content in {
        "ok": results("ok", 10.0),
        "garbage": "{not json",
        "nan": results("nan", float("nan")),
        "negative": results("negative", -1.0),
        "list": "[1, 2]",
    }.items():
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(content)
    (out / "elsewhere.json").write_text(results("linked", 63.0))
    (out / "linked").mkdir()
    (out / "linked" / "results.json").symlink_to(out / "elsewhere.json")
    (out / "crashed").mkdir()
    (out / ".grader-cache").mkdir()
    done = export(out, lms="canvas", assignment=TITLE, catalog=EN)
    assert done.path == out / "canvas-grades.csv" and done.rows == 1
    assert sorted(done.unreadable) == ["crashed", "garbage", "linked", "list", "nan", "negative"]
    _, students = canvas_import(done.path.read_text(encoding="utf-8"))
    assert [s["login"] for s in students] == ["ok"]


@pytest.mark.parametrize("first, second", [("Alice", "alice"), ("Zo\u00eb", "Zoe\u0308"), ("bob", "BOB ")])
@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_students_an_lms_cannot_tell_apart_are_left_out_and_named(tmp_path, first, second, lms):
    """Canvas and Moodle match logins without regard to case: one grade must never overwrite another."""
    out = tmp_path / "reports"
    for name, score in ((first, 9.0), (second, 3.0), ("carol", 5.0)):
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(results(name, score))
    done = export(out, lms=lms, assignment=TITLE, catalog=EN)
    assert sorted(done.ambiguous) == sorted([first, second]) and done.rows == 1
    text = done.path.read_text(encoding="utf-8")
    assert first not in text and second.strip() not in text and "carol" in text


def test_one_submissions_output_folder(tmp_path):
    (tmp_path / "results.json").write_text(results("submission", 41.0))
    done = export(tmp_path, lms="moodle", assignment=TITLE, catalog=EN)
    assert moodle_import(done.path.read_text(encoding="utf-8"), "Student") == [
        {"id": "submission", "grades": {TITLE: 41.0}}
    ]


def test_a_student_named_results_json_is_one_of_a_class(tmp_path):
    out = tmp_path / "reports"
    for name, score in (("results.json", 7.0), ("alice", 9.0)):
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(results(name, score))
    done = export(out, lms="moodle", assignment=TITLE, catalog=EN)
    users = moodle_import(done.path.read_text(encoding="utf-8"), "Student")
    assert {u["id"]: u["grades"][TITLE] for u in users} == {"results.json": 7.0, "alice": 9.0}


def test_a_student_folder_never_becomes_the_export_and_a_link_is_replaced(tmp_path):
    out = tmp_path / "reports"
    (out / "canvas-grades.csv").mkdir(parents=True)  # a student named like the default export
    (out / "canvas-grades.csv" / "results.json").write_text(results("canvas-grades.csv", 5.0))
    with pytest.raises(ExportError) as raised:
        export(out, lms="canvas", assignment=TITLE, catalog=EN)
    assert raised.value.key == "target-is-folder"
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (tmp_path / "link.csv").symlink_to(victim)
    export(out, lms="canvas", assignment=TITLE, catalog=EN, to=tmp_path / "link.csv")
    assert victim.read_text() == "untouched" and not (tmp_path / "link.csv").is_symlink()


def test_grade_never_names_a_students_folder_like_a_default_export():
    from grader.classroom.lms_export import LMS
    from grader.run import CLASS_OUTPUTS

    assert {f"{lms}-grades.csv" for lms in LMS} <= CLASS_OUTPUTS  # grade renames such a student's folder


# -- rosters: the LMS's own export tells who is who -----------------------------------------------

CANVAS_ROSTER = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Homework 1 (101),Final Score\n"
    "    Points Possible,,,,,10,\n"
    '"Liddell, Alice",1001,S-1,alice,Section A,9,90\n'
    '"Builder, Bob",1002,S-2,bob,Section B,7,70\n'
    '"Nobody, Ned",1003,S-3,ned,Section B,,\n'
)


def test_a_canvas_roster_gives_canvas_ids_and_names(class_output, tmp_path):
    out, documents = class_output
    roster = tmp_path / "roster.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    done = export(out, lms="canvas", assignment=TITLE, catalog=EN, roster=roster, to=tmp_path / "c.csv")
    points, students = canvas_import((tmp_path / "c.csv").read_text(encoding="utf-8"))
    assert [(s["student"], s["id"], s["sis"], s["login"], s["section"]) for s in students] == [
        ("Liddell, Alice", "1001", "S-1", "alice", "Section A"),
        ("Builder, Bob", "1002", "S-2", "bob", "Section B"),
    ]
    assert [s["grades"][TITLE] for s in students] == [documents["alice"]["score"], documents["bob"]["score"]]
    assert done.unmatched == ["carol", "dave", "erin", "frank"] and done.not_submitted == ["ned"]


def test_a_moodle_roster_keyed_by_email(class_output, tmp_path):
    out, documents = class_output
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "First name;Last name;ID number;Email address\nCarol;Chen;20230003;carol\nDave;Diaz;20230004;dave\n",
        encoding="utf-8",
    )
    done = export(out, lms="moodle", assignment=TITLE, catalog=EN, roster=roster, to=tmp_path / "m.csv")
    assert done.identity_column == "Email address"
    users = moodle_import((tmp_path / "m.csv").read_text(encoding="utf-8"), "Email address")
    assert users == [
        {"id": "carol", "grades": {TITLE: documents["carol"]["score"]}},
        {"id": "dave", "grades": {TITLE: documents["dave"]["score"]}},
    ]


def test_a_folder_two_roster_rows_match_gets_no_grade_and_is_named_in_both_languages(class_output, tmp_path):
    """Two students of one name in the roster: the folder's grade is neither's (never the first row's)."""
    out, documents = class_output
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        "carol,2001,S-1,carol.chen,A\nCarol,2002,S-2,carol.cruz,B\nbob,2003,S-3,bob,A\n",
        encoding="utf-8",
    )
    done = export(out, lms="canvas", assignment=TITLE, catalog=EN, roster=roster, to=tmp_path / "c.csv")
    points, students = canvas_import((tmp_path / "c.csv").read_text(encoding="utf-8"))
    assert [(s["id"], s["grades"][TITLE]) for s in students] == [("2003", documents["bob"]["score"])]
    assert done.ambiguous_rows == ["carol"] and done.rows == 1
    assert "carol" not in done.unmatched and done.not_submitted == []  # both rows have a submission: not theirs
    for lang, words in (("en", "more than one row of the roster"), ("zh", "不止一行")):
        said = subprocess.run(
            [sys.executable, "-m", "grader", "export", str(out), "--lms", "canvas", "--roster", str(roster)]
            + ["--to", str(tmp_path / f"{lang}.csv"), "--lang", lang],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert said.returncode == 0, said.stderr
        assert [
            line for line in said.stdout.splitlines() if words in line and line.endswith(("): carol", "）：carol"))
        ], said.stdout


@pytest.mark.parametrize(
    "content, key, error",
    [
        ("name,login\nX,nobody\n", None, "roster-no-key"),
        ("name,login\nX,alice\n", "email", "roster-no-column"),
        ("name,login\nalice,x\n", "login", "roster-key-matches-none"),
        ("\n\n", None, "roster-no-header"),
    ],
)
def test_roster_problems_are_named(class_output, tmp_path, content, key, error):
    roster = tmp_path / "roster.csv"
    roster.write_text(content)
    with pytest.raises(ExportError) as raised:
        export(
            class_output[0],
            lms="canvas",
            assignment=TITLE,
            catalog=EN,
            roster=roster,
            roster_key=key,
            to=tmp_path / "x.csv",
        )
    assert raised.value.key == error and EN.has(f"export.error.{error}")


def test_cli_errors_are_clear_in_both_languages(tmp_path):
    for lang, words in (("en", "does not exist"), ("zh", "不存在")):
        done = subprocess.run(
            [sys.executable, "-m", "grader", "export", str(tmp_path / "nope"), "--lms", "moodle", "--lang", lang],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def test_the_deploy_catalogue_says_everything_in_both_languages():
    import tomllib

    def keys(table: dict, prefix: str = "") -> set[str]:
        found = set()
        for key, value in table.items():
            found |= keys(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key}
        return found

    catalogues = {
        lang: tomllib.loads((ROOT / "grader" / "templates" / "i18n" / lang / "deploy.toml").read_text(encoding="utf-8"))
        for lang in ("en", "zh")
    }
    assert keys(catalogues["en"]) == keys(catalogues["zh"])
    assert len(keys(catalogues["en"])) > 40
