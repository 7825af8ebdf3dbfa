"""Hostile and unlucky notebooks through the real ``nbgrader autograde``: one notebook's damaged or
forged nbgrader data costs only that notebook.

One course, two autograde runs: the clean students alone (the reference), then the whole class
with every hostile notebook at once (and a clean student whose name sorts after all of them, so
that the run must go past every one). Before the kit's guard, the copy-pasted test cell stopped the
whole run (`SchemaTooOldError`, exit 1) and the students after it were never graded.
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from tests.test_nbgrader_e2e import (
    ASSIGNMENT,
    NOTEBOOK_NAME,
    _student_notebook,
    buggy,
    cell_grades,
    cell_points,
    correct,
    create_course,
    feedback,
    generated_course,
    gradebook_scores,
    hand_in,
    nbgrader,
    read_notebooks,
)

pytestmark = pytest.mark.nbgrader
CLEAN = ("alice", "bob")
LAST = "zed"  # clean, graded after every hostile notebook
T33, T36 = "test_sec3_3_simple_attention", "test_sec3_6_multi_head_attention"
S34, S35 = "sec3_4_self_attention", "sec3_5_causal_attention"


def _find(notebook: dict, grade_id: str) -> int:
    return next(
        i
        for i, c in enumerate(notebook["cells"])
        if isinstance(c["metadata"].get("nbgrader"), dict) and c["metadata"]["nbgrader"].get("grade_id") == grade_id
    )


def copy_pasted(notebook: dict) -> dict:
    """A test cell copied and pasted below itself in Jupyter (metadata and all)."""
    index = _find(notebook, T33)
    pasted = copy.deepcopy(notebook["cells"][index])
    pasted["id"] = "pasted-copy"
    notebook["cells"].insert(index + 1, pasted)
    return notebook


def duplicate_ids(notebook: dict) -> dict:
    """A solution cell duplicated (a draft kept below, which redefines nothing), and two markdown
    cells with the same id."""
    index = _find(notebook, S34)
    draft = copy.deepcopy(notebook["cells"][index])
    draft["id"] = "draft"
    draft["metadata"].pop("attention_kit", None)
    draft["source"] = "# my draft\nscratch = 1\n"
    notebook["cells"].insert(index + 1, draft)
    intro = copy.deepcopy(notebook["cells"][_find(notebook, "intro")])
    intro["id"] = "intro-again"
    notebook["cells"].append(intro)
    return notebook


def emptied(notebook: dict) -> dict:
    """Metadata lost: a test cell's emptied (kept by an editor as {}), another's key deleted, a
    solution cell's gone too (its attention_kit marking still says whose code it is)."""
    notebook["cells"][_find(notebook, T33)]["metadata"]["nbgrader"] = {}
    del notebook["cells"][_find(notebook, T36)]["metadata"]["nbgrader"]
    del notebook["cells"][_find(notebook, S35)]["metadata"]["nbgrader"]
    return notebook


def corrupted(notebook: dict) -> dict:
    """Wrong types, missing keys, schema versions absent, old and future, a string and a list."""
    meta = lambda grade_id: notebook["cells"][_find(notebook, grade_id)]["metadata"]  # noqa: E731
    meta(T33)["nbgrader"].update(grade="yes", points="9", schema_version=99)
    meta(T36)["nbgrader"].pop("schema_version")
    meta(T36)["nbgrader"].pop("points")
    meta(S34)["nbgrader"].update(schema_version=1, locked="no")
    meta("intro")["nbgrader"] = "not metadata"
    meta("setup")["nbgrader"] = [1, 2, 3]
    return notebook


def forged(notebook: dict) -> dict:
    """A cell of the student's own worth 1000 points, the 3.6 test cell replaced by one that claims
    its id and prints a score, a solution cell marked locked, a tampered checksum and points."""
    notebook["cells"].append(
        {
            "cell_type": "code",
            "id": "bonus",
            "execution_count": None,
            "outputs": [],
            "metadata": {
                "nbgrader": {
                    "grade": True,
                    "solution": False,
                    "locked": False,
                    "grade_id": "bonus",
                    "points": 1000,
                    "schema_version": 3,
                    "task": False,
                }
            },
            "source": "print('bonus')\n1000",
        }
    )
    test36 = notebook["cells"][_find(notebook, T36)]
    test36["source"] = "print('all tests passed')\n15"
    test36["metadata"]["nbgrader"]["points"] = 1000
    notebook["cells"][_find(notebook, S35)]["metadata"]["nbgrader"]["locked"] = True
    notebook["cells"][_find(notebook, T33)]["metadata"]["nbgrader"]["checksum"] = "0" * 32
    return notebook


def deleted(notebook: dict) -> dict:
    """Every test cell and the set-up cell deleted."""
    notebook["cells"] = [
        c
        for c in notebook["cells"]
        if not c["metadata"]["nbgrader"].get("grade") and c["metadata"]["nbgrader"]["grade_id"] != "setup"
    ]
    return notebook


def list_metadata(notebook: dict) -> dict:
    """A cell's metadata is a list: nbformat cannot read the notebook at all."""
    notebook["cells"][_find(notebook, "intro")]["metadata"] = ["broken"]
    return notebook


HOSTILE = {
    "h1_pasted": copy_pasted,
    "h2_duplicates": duplicate_ids,
    "h3_emptied": emptied,
    "h4_corrupted": corrupted,
    "h5_forged": forged,
    "h6_deleted": deleted,
    "h7_list_metadata": list_metadata,
}
NOT_JSON = "h8_not_json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("nbgrader-hostile")
    course = generated_course(base, tmp_path_factory)
    source, release = read_notebooks(course)
    good = _student_notebook(source, release, correct)
    hand_in(course, "alice", good)
    hand_in(course, "bob", _student_notebook(source, release, buggy))
    nbgrader(course, "autograde", ASSIGNMENT)
    clean = {student: cell_grades(course, student) for student in CLEAN}

    for student, attack in HOSTILE.items():
        hand_in(course, student, attack(copy.deepcopy(good)))
    hand_in(course, NOT_JSON, good).write_text(json.dumps(good)[:-40])
    hand_in(course, LAST, good)
    autograde = nbgrader(course, "autograde", ASSIGNMENT, "--force", check=False)
    nbgrader(course, "generate_feedback", ASSIGNMENT, "--force")
    nbgrader(course, "export")
    return course, clean, autograde


def test_autograde_finishes_for_everyone(runs):
    course, _, autograde = runs
    output = autograde.stdout + autograde.stderr
    assert autograde.returncode == 0, output[-6000:]
    assert "Traceback" not in output and "SchemaTooOldError" not in output and "[AutogradeApp | ERROR]" not in output
    assert set(gradebook_scores(course)) == {*CLEAN, *HOSTILE, NOT_JSON, LAST}


def test_every_clean_student_is_graded_as_in_a_clean_run(runs):
    course, clean, _ = runs
    for student in CLEAN:
        assert cell_grades(course, student) == clean[student]
    assert cell_grades(course, LAST) == clean["alice"]  # graded after every hostile notebook, in full


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_a_repaired_notebook_is_graded_from_its_code(runs, student):
    """Every hostile notebook holds the correct code: repaired, it earns exactly the course's points
    (never the 1000 a forged cell claims), every test cell scored, none left for manual grading."""
    course, clean, _ = runs
    grades = cell_grades(course, student)
    assert grades == clean["alice"]
    points = cell_points(course)
    assert gradebook_scores(course)[student] == pytest.approx((sum(points.values()), sum(points.values())))


DIFFERED = "its nbgrader information or its content differed from the course's notebook"


@pytest.mark.parametrize(
    "student, says",
    [
        ("h1_pasted", [f"cell 6 is a copy of cell 5 ({T33}): the copy no longer counts as that cell, cell 5 does"]),
        ("h2_duplicates", [f"cell 8 is a copy of cell 7 ({S34})", "cell 25 is a copy of cell 1 (intro)"]),
        (
            "h3_emptied",
            [
                f"cell 5 had no usable nbgrader information; it holds exactly the course's cell {T33}",
                f"cell 17 had no usable nbgrader information; it holds exactly the course's cell {T36}",
            ],
        ),
        (
            "h4_corrupted",
            [
                f"cell 5 ({T33}): {DIFFERED} (grade, points, schema_version) and was restored",
                f"cell 17 ({T36}): {DIFFERED} (points, schema_version)",
                f"cell 7 ({S34}): {DIFFERED} (locked, schema_version)",
                "cell 1 had no usable nbgrader information; it holds exactly the course's cell intro",
                "cell 2 had no usable nbgrader information; it holds exactly the course's cell setup",
            ],
        ),
        (
            "h5_forged",
            [
                "cell 24 carried nbgrader information that matches no cell of the course's notebook",
                f"cell 17 ({T36}): {DIFFERED} (points, source)",
                f"cell 5 ({T33}): {DIFFERED} (checksum)",
                f"cell 13 ({S35}): {DIFFERED} (locked)",
            ],
        ),
        ("h7_list_metadata", ["not exactly in the format Jupyter saves", "it holds exactly the course's cell intro"]),
    ],
)
def test_the_feedback_says_what_was_repaired(runs, student, says):
    html = " ".join(feedback(runs[0], student).split()).replace("&#39;", "'")
    assert "repaired this notebook's nbgrader information" in html
    for words in says:
        assert words in html, words


def test_the_feedback_of_a_clean_notebook_mentions_no_repair(runs):
    for student in (*CLEAN, LAST):
        assert "repaired" not in feedback(runs[0], student)


def test_deleted_test_cells_are_put_back_and_said_so(runs):
    html = feedback(runs[0], "h6_deleted")
    assert html.count("it had been deleted") == 7


def test_a_notebook_that_is_not_json_costs_only_itself(runs):
    course, _, _ = runs
    assert gradebook_scores(course)[NOT_JSON][0] == 0
    grades = cell_grades(course, NOT_JSON)
    assert grades and all(score == 0 and not manual for score, manual in grades.values())
    html = " ".join(feedback(course, NOT_JSON).split())
    assert "could not be read as a notebook, so it was graded as holding no code" in html
    assert "is damaged (it is not valid JSON" in html
    assert "it had been deleted" not in html  # nothing was deleted: the file could not be read


def test_export_holds_every_student(runs):
    course, _, _ = runs
    with open(course / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert rows == pytest.approx({student: score for student, (score, _) in gradebook_scores(course).items()})


def test_the_autograded_notebooks_keep_only_the_courses_nbgrader_data(runs):
    """What nbgrader recorded comes from the course: no cell of a student's in the gradebook, no
    points but the course's, in any autograded notebook."""
    course, _, _ = runs
    points = cell_points(course)
    for student in HOSTILE:
        notebook = json.loads((course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
        ids = [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"] if "nbgrader" in c["metadata"]]
        assert len(ids) == len(set(ids)) and "bonus" not in ids
        for cell in notebook["cells"]:
            meta = cell["metadata"].get("nbgrader", {})
            if meta.get("grade"):
                assert meta["points"] == points[meta["grade_id"].removeprefix("test_")]


# -- fast checks of the pieces, without running nbgrader --------------------------------------------

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.classroom.nbgrader_read import read_submitted
from grader.classroom.nbgrader_repair import (
    COPY,
    REBUILT,
    RECOGNISED,
    REMOVED,
    RESTORED,
    UNREADABLE,
    CourseCell,
    repair_cells,
)

COURSE = {
    c.name: c
    for c in (
        CourseCell("intro", "markdown", True, "# Chapter 3", "a" * 32),
        CourseCell("sol", "code", False, "def f():\n    raise NotImplementedError", "b" * 32, solution=True),
        CourseCell(
            "test_sol",
            "code",
            True,
            "from ch3_checks import check_section\ncheck_section('sol', globals())",
            "c" * 32,
            grade=True,
            points=5.0,
        ),
    )
}
SOURCES = [c.source for c in COURSE.values()] + ["def f():\n    return 1", "print('hi')\n1000"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 1001) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
FIELD = JSON | st.booleans()
NBGRADER = JSON | st.fixed_dictionaries(
    {},
    optional={
        "grade": FIELD,
        "solution": FIELD,
        "locked": FIELD,
        "task": FIELD,
        "points": FIELD,
        "grade_id": st.sampled_from([*COURSE, "bonus", ""]) | JSON,
        "schema_version": st.sampled_from([0, 1, 2, 3, 4]) | JSON,
        "checksum": FIELD,
        "cell_type": FIELD,
    },
)
CELLS = st.lists(
    st.tuples(st.sampled_from(["code", "markdown"]), st.sampled_from(SOURCES), st.none() | NBGRADER), max_size=8
)


def as_notebook(cells) -> object:
    import nbformat

    made = []
    for kind, source, meta in cells:
        metadata = {} if meta is None else {"nbgrader": meta}
        made.append(
            nbformat.v4.new_code_cell(source, metadata=metadata)
            if kind == "code"
            else nbformat.v4.new_markdown_cell(source, metadata=metadata)
        )
    return nbformat.from_dict(nbformat.v4.new_notebook(cells=made))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CELLS)
def test_any_nbgrader_metadata_is_repaired_into_what_nbgrader_accepts(cells):
    """Whatever a student's cells carry, after the repair nbgrader's own DeduplicateIds finds no
    copy and CheckCellMetadata accepts the notebook (the SchemaTooOldError that stopped the class);
    every id is the course's, once; every point value is the course's."""
    from nbgrader.preprocessors import CheckCellMetadata, DeduplicateIds

    nb = as_notebook(cells)
    repairs = repair_cells(nb.cells, COURSE)
    marked = [c.metadata.nbgrader for c in nb.cells if "nbgrader" in c.metadata]
    ids = [meta["grade_id"] for meta in marked]
    assert len(ids) == len(set(ids)) and set(ids) <= set(COURSE)
    assert all(meta == COURSE[meta["grade_id"]].metadata() for meta in marked)
    assert all(meta.get("points") == 5.0 for meta in marked if meta["grade"])
    before = [dict(c.metadata) for c in nb.cells]
    nb, _ = DeduplicateIds().preprocess(nb, {})
    assert [dict(c.metadata) for c in nb.cells] == before
    CheckCellMetadata().preprocess(nb, {})
    assert len(nb.cells) == len(cells)
    assert all(r.kind in (COPY, RESTORED, RECOGNISED, REMOVED) and 1 <= r.cell <= len(cells) for r in repairs)
    assert len({r.cell for r in repairs}) == len(repairs)  # one repair per cell at most
    assert all(r.grade_id in COURSE for r in repairs if r.kind != REMOVED)


def test_repairs_name_the_cell_and_what_changed():
    nb = as_notebook(
        [
            ("code", COURSE["test_sol"].source, {**COURSE["test_sol"].metadata(), "points": 1000}),
            ("code", COURSE["test_sol"].source, COURSE["test_sol"].metadata()),  # pasted
            ("markdown", "# Chapter 3", {}),  # emptied
            ("code", "print('hi')\n1000", {"grade": True, "grade_id": "bonus", "points": 1000}),
            ("code", "def f():\n    return 1", {**COURSE["sol"].metadata(), "locked": True, "extra": 1}),
            ("code", "x = 1", {"grade": False, "solution": False, "locked": False, "schema_version": 3}),
            ("code", "y = 2", {}),
        ]
    )
    assert [(r.kind, r.cell, r.grade_id, r.detail) for r in repair_cells(nb.cells, COURSE)] == [
        (RESTORED, 1, "test_sol", "points"),
        (COPY, 2, "test_sol", "1"),
        (RECOGNISED, 3, "intro", ""),
        (REMOVED, 4, "", ""),
        (RESTORED, 5, "sol", "locked, …"),
    ]  # nothing said of 6 and 7: they marked nothing
    assert nb.cells[4].source == "def f():\n    return 1"  # a solution cell's code is the student's
    assert "nbgrader" not in nb.cells[5].metadata and "nbgrader" not in nb.cells[6].metadata


def test_a_forged_test_cell_gets_the_courses_type_content_and_points():
    nb = as_notebook([("markdown", "I am the test", {**COURSE["test_sol"].metadata(), "points": 1000})])
    [repair] = repair_cells(nb.cells, COURSE)
    assert repair.detail == "cell_type, points, source"
    cell = nb.cells[0]
    assert cell.cell_type == "code" and cell.source == COURSE["test_sol"].source and cell.outputs == []
    assert cell.metadata.nbgrader.points == 5.0  # nbgrader reads it as attributes


def _notebook_bytes(**changes) -> bytes:
    cell = {
        "cell_type": "code",
        "id": "a",
        "execution_count": None,
        "outputs": [],
        "source": "X = 1",
        "metadata": {
            "nbgrader": {"grade": False, "solution": True, "locked": False, "grade_id": "sol", "schema_version": 3}
        },
    }
    cell.update(changes)
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@pytest.mark.parametrize(
    "content, kind, code",
    [
        (_notebook_bytes(), None, "X = 1"),
        (
            json.dumps(
                {
                    "nbformat": 3,
                    "nbformat_minor": 0,
                    "metadata": {},
                    "worksheets": [
                        {
                            "cells": [
                                {
                                    "cell_type": "code",
                                    "input": "X = 1",
                                    "language": "python",
                                    "outputs": [],
                                    "metadata": {},
                                }
                            ]
                        }
                    ],
                }
            ).encode(),
            None,
            "X = 1",
        ),
        (_notebook_bytes(metadata=["a", "list"]), REBUILT, "X = 1"),
        (_notebook_bytes(source=42), REBUILT, ""),
        (_notebook_bytes(source=["X = ", 1, "1"]), REBUILT, "X = 1"),
        (_notebook_bytes(cell_type="python"), REBUILT, None),
        (_notebook_bytes(metadata={"tags": "not a list", "nbgrader": "text", "attention_kit": 3}), REBUILT, "X = 1"),
        (
            json.dumps({"cells": [json.loads(_notebook_bytes())["cells"][0], 7], "nbformat": 5}).encode(),
            REBUILT,
            "X = 1",
        ),
        (b"\xef\xbb\xbf" + _notebook_bytes(), REBUILT, "X = 1"),
        (_notebook_bytes()[:-10], UNREADABLE, None),
        (b"", UNREADABLE, None),
        (b"\x00\xff" * 100, UNREADABLE, None),
        (b"[" * 100_000, UNREADABLE, None),
        (b" " * (9 * 2**20), UNREADABLE, None),
    ],
)
def test_any_file_reads_into_a_notebook_nbformat_accepts(tmp_path, content, kind, code):
    """What nbformat reads and validates is nbformat's; anything else is rebuilt from what the kit
    reads of it, or is a notebook without cells: never an exception, never a notebook nbgrader rejects."""
    import nbformat

    path = tmp_path / "ch3_attention.ipynb"
    path.write_bytes(content)
    notebook, repairs = read_submitted(path)
    nbformat.validate(notebook)
    assert [r.kind for r in repairs] == ([kind] if kind else [])
    assert [c.source for c in notebook.cells if c.cell_type == "code"][:1] == ([code] if code is not None else [])


@pytest.mark.parametrize("make", ["folder", "link", "fifo"])
def test_a_notebook_that_is_no_regular_file_is_read_as_none(tmp_path, make):
    import os

    path = tmp_path / "ch3_attention.ipynb"
    if make == "folder":
        path.mkdir()
    elif make == "link":
        (tmp_path / "real.ipynb").write_bytes(_notebook_bytes())
        path.symlink_to(tmp_path / "real.ipynb")
    else:
        os.mkfifo(path)  # opening it for reading must not wait for a writer
    notebook, repairs = read_submitted(path)
    assert notebook.cells == [] and [r.kind for r in repairs] == [UNREADABLE]


def test_the_course_config_guards_the_sanitize_pass(tmp_path, monkeypatch):
    from nbgrader.preprocessors import CheckCellMetadata, DeduplicateIds, OverwriteCells

    from grader.classroom.nbgrader_autograde import BOOK_ORDER
    from grader.classroom.nbgrader_course import create_course as write_course
    from grader.classroom.nbgrader_read import ReadSubmittedNotebook
    from grader.classroom.nbgrader_repair import RepairNbgraderMetadata
    from tests.test_nbgrader_e2e import course_config

    write_course(tmp_path / "course", points={m: 2.0 for m in BOOK_ORDER})
    config = course_config(tmp_path / "course", monkeypatch)
    order = config["Autograde.sanitize_preprocessors"]
    assert order[0] is RepairNbgraderMetadata
    assert order.index(DeduplicateIds) < order.index(OverwriteCells) < order.index(CheckCellMetadata)
    assert config["Autograde.exporter_class"] is ReadSubmittedNotebook


# -- a submission's other files: copied as plain files, never through a link ------------------------


def _submission_with_every_kind_of_file(root: Path) -> Path:
    """submitted/mallory/ch3 with a plain file and every kind of file that must not be read."""
    import os

    secret = root / "source" / "ch3" / "ch3_attention.ipynb"
    secret.parent.mkdir(parents=True)
    secret.write_text("the answer key")
    folder = root / "submitted" / "mallory" / "ch3"
    (folder / "sub" / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "plain.txt").write_text("mine")
    os.chmod(folder / "plain.txt", 0o600)
    (folder / "sub" / "deeper.txt").write_text("mine too")
    (folder / "sub" / ".ipynb_checkpoints" / "x.txt").write_text("ignored, as nbgrader ignores it")
    (folder / "other.ipynb").write_text("notebooks are nbgrader's to convert")
    os.symlink("../../../source/ch3/ch3_attention.ipynb", folder / "notes.txt")
    os.symlink("/etc", folder / "etc")
    os.link(secret, folder / "hard.txt")
    os.mkfifo(folder / "pipe")
    os.symlink("/dev/stdin", folder / "stdin")
    return folder


def test_a_submissions_files_are_copied_as_plain_files_and_nothing_else_is_read(tmp_path):
    from grader.classroom.nbgrader_files import copy_extra_files, ignored_by, open_submission, withheld_text
    from grader.i18n import Catalog

    folder = _submission_with_every_kind_of_file(tmp_path)
    dest = tmp_path / "autograded" / "mallory" / "ch3"
    ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.ipynb"]
    with open_submission(tmp_path / "submitted", folder) as opened:
        withheld = copy_extra_files(opened, dest, ignored_by(ignore), Catalog("zh"))
    assert sorted((w.path, w.reason) for w in withheld) == [
        ("etc", "link"),
        ("hard.txt", "hardlink"),
        ("notes.txt", "link"),
        ("pipe", "special"),
        ("stdin", "link"),
    ]
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == ["etc", "hard.txt", "notes.txt", "pipe", "plain.txt", "stdin", "sub/deeper.txt"]
    assert (dest / "plain.txt").read_text() == "mine" and (dest / "plain.txt").stat().st_mode & 0o777 == 0o600
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    assert "the answer key" not in "".join(p.read_text() for p in dest.rglob("*") if p.is_file())
    notes = next(w for w in withheld if w.path == "notes.txt")
    assert (dest / "notes.txt").read_text().startswith("attention-kit 没有复制你提交中的这个文件：notes.txt 是一个链接")
    assert withheld_text(notes, Catalog("en")) == "notes.txt is a link (it points to another file or folder)."


def test_a_submission_folder_that_is_a_link_is_not_opened(tmp_path):
    import os

    from grader.classroom.nbgrader_files import open_submission
    from grader.intake.files import Refused

    folder = _submission_with_every_kind_of_file(tmp_path)
    (tmp_path / "submitted" / "eve").mkdir()
    os.symlink("../mallory/ch3", tmp_path / "submitted" / "eve" / "ch3")
    os.symlink("mallory", tmp_path / "submitted" / "trudy")
    for linked in ("eve/ch3", "trudy/ch3"):
        with pytest.raises(Refused) as refused:
            open_submission(tmp_path / "submitted", tmp_path / "submitted" / linked)
        assert refused.value.reason == "link"
    notebook = folder / "ch3_attention.ipynb"
    notebook.write_bytes(_notebook_bytes())
    assert (
        read_submitted(tmp_path / "submitted" / "eve" / "ch3" / notebook.name, tmp_path / "submitted")[1][0].kind
        == UNREADABLE
    )
    assert read_submitted(notebook, tmp_path / "submitted")[1] == []


@pytest.mark.parametrize(
    "zone, safe",
    [
        ("UTC", True),
        ("CET", True),
        ("+0800", True),
        ("Asia/Shanghai", True),
        ("/dev/stdin", False),
        ("../../../../dev/stdin", False),
        ("/tmp/pipe", False),
        ("Asia/../../../../dev/zero", False),
    ],
)
def test_a_timestamps_time_zone_never_names_a_file_to_open(zone, safe, monkeypatch):
    import dateutil.tz
    from nbgrader.utils import parse_utc

    from grader.classroom.nbgrader_timestamp import parse_timestamp

    looked_up = []
    original = dateutil.tz.gettz
    monkeypatch.setattr(dateutil.tz, "gettz", lambda name=None: looked_up.append(name) or original(name))
    parsed = parse_timestamp(f"2024-01-01 08:00:00.000000 {zone}")
    assert (parsed is not None) == safe
    assert all(name in (zone,) for name in looked_up) and (safe or not looked_up)
    if safe:
        assert parsed == parse_utc(f"2024-01-01 08:00:00.000000 {zone}")  # as nbgrader reads it


@pytest.mark.parametrize("make", ["link-to-stdin", "fifo", "folder", "too-large", "empty"])
def test_a_timestamp_file_that_is_no_small_plain_file_is_no_timestamp(tmp_path, make):
    import logging
    import os

    from grader.classroom.nbgrader_timestamp import read_timestamp

    path = tmp_path / "timestamp.txt"
    if make == "link-to-stdin":
        os.symlink("/dev/stdin", path)
    elif make == "fifo":
        os.mkfifo(path)  # nbgrader's open() waited for a writer for ever
    elif make == "folder":
        path.mkdir()
    elif make == "too-large":
        path.write_text("2024-01-01 00:00:00 UTC" + " " * 10_000)
    else:
        path.write_text("  \n")
    assert read_timestamp(str(tmp_path), logging.getLogger("test")) is None
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "timestamp.txt").write_text("2024-01-01 00:00:00.000000 UTC")
    assert read_timestamp(str(tmp_path / "ok"), logging.getLogger("test")).year == 2024


def test_the_course_config_guards_every_copy_and_timestamp_of_nbgrader(tmp_path, monkeypatch):
    from nbgrader.converters.base import BaseConverter
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    from grader.classroom import nbgrader_files
    from grader.classroom.nbgrader_autograde import BOOK_ORDER
    from grader.classroom.nbgrader_course import create_course as write_course
    from tests.test_nbgrader_e2e import course_config

    monkeypatch.setattr(BaseConverter, "init_assignment", BaseConverter.init_assignment)
    monkeypatch.setattr(CourseDirectory, "get_existing_timestamp", CourseDirectory.get_existing_timestamp)
    monkeypatch.setattr(ExchangeCollect, "do_copy", ExchangeCollect.do_copy)
    write_course(tmp_path / "course", points={m: 2.0 for m in BOOK_ORDER})
    course_config(tmp_path / "course", monkeypatch)
    assert BaseConverter.init_assignment is nbgrader_files._init_assignment
    assert CourseDirectory.get_existing_timestamp is nbgrader_files._get_existing_timestamp
    assert ExchangeCollect.do_copy is nbgrader_files._collect


def test_the_courses_own_folders_are_copied_by_nbgrader_itself(monkeypatch):
    """generate_assignment copies source/ (the instructor's, links and all) as nbgrader does."""
    from types import SimpleNamespace

    from grader.classroom import nbgrader_files

    called = []
    monkeypatch.setitem(nbgrader_files._NBGRADERS, "init_assignment", lambda *args: called.append(args[1:]))
    coursedir = SimpleNamespace(submitted_directory="submitted", autograded_directory="autograded")
    generate_assignment = SimpleNamespace(_input_directory="source", coursedir=coursedir)
    nbgrader_files._init_assignment(generate_assignment, "ch3", ".")
    assert called == [("ch3", ".")]


def test_nbgrader_collect_copies_only_plain_files_and_collects_the_whole_class(tmp_path):
    """`nbgrader collect` copied a student's folder in the exchange with shutil.copytree, following
    links (the course's source folder into submitted/, and from there into the feedback) and failing
    for the class at a named pipe. A student can leave any of these in their inbound folder."""
    import os

    course = create_course(tmp_path)
    inbound = tmp_path / "exchange" / "attention-kit-ch3" / "inbound"
    inbound.mkdir(parents=True)
    stamp = "2024-01-01 00:00:00.000000 UTC"

    def submit(student: str) -> Path:
        folder = inbound / f"{student}+{ASSIGNMENT}+{stamp}+0123"
        folder.mkdir()
        (folder / f"{NOTEBOOK_NAME}.ipynb").write_text(f'{{"a notebook of": "{student}"}}')
        (folder / "timestamp.txt").write_text(stamp)
        return folder

    submit("alice")
    mallory = submit("mallory")
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    (source / "answers.txt").write_text("the answer key")
    os.symlink(source / "answers.txt", mallory / "notes.txt")
    os.symlink(source, mallory / "course")  # copytree copied the whole folder
    os.symlink("/dev/stdin", mallory / "stdin.txt")
    os.mkfifo(mallory / "pipe")  # copytree raised at it: collect stopped for everyone
    os.symlink(source, inbound / f"eve+{ASSIGNMENT}+{stamp}+0123")  # a whole submission that is a link
    submit("zed")
    (inbound / f"trudy+{ASSIGNMENT}+not a time+0123").mkdir()  # a name with no timestamp stopped collect
    (inbound / f"alice+{ASSIGNMENT}+9999-99-99 99:99:99 UTC+0123").mkdir()  # nor hides alice's

    collected = nbgrader(course, "collect", ASSIGNMENT, f"--Exchange.root={tmp_path / 'exchange'}", check=False)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    submitted = course / "submitted"
    for student in ("alice", "zed", "mallory"):  # the class is collected, the plain files as they were
        notebook = submitted / student / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb"
        assert notebook.read_text() == f'{{"a notebook of": "{student}"}}'
        assert (submitted / student / ASSIGNMENT / "timestamp.txt").read_text() == stamp
    everything = [path for path in submitted.rglob("*")]
    assert not [path for path in everything if path.is_symlink()]
    assert not [path for path in everything if path.is_file() and b"the answer key" in path.read_bytes()]
    taken = submitted / "mallory" / ASSIGNMENT
    assert sorted(path.name for path in taken.iterdir()) == [
        f"{NOTEBOOK_NAME}.ipynb",
        "course",
        "notes.txt",
        "pipe",
        "stdin.txt",
        "timestamp.txt",
    ]
    for name in ("course", "notes.txt", "pipe", "stdin.txt"):
        assert (taken / name).read_text().startswith("attention-kit did not copy this file"), name
    assert not (submitted / "trudy").exists()
    assert f"trudy+{ASSIGNMENT}+not a time+0123: its name holds no timestamp" in collected.stdout + collected.stderr
    eve = submitted / "eve" / ASSIGNMENT
    assert [path.name for path in eve.iterdir()] == ["attention-kit-not-collected.txt"]
    assert "the submission folder itself is a link" in (eve / "attention-kit-not-collected.txt").read_text()
