"""Round-four attack on Gradescope / PrairieLearn uploads (issue 36, point 4: "where it holds two
candidate folders, grade the one with the modules (or the more complete) and say which"). Honest
uploads that hold a complete submission beside a partial one get the partial one graded:

- a complete chapter notebook at the top and a folder ``old/`` with one module: 1 module graded,
  no remark;
- ``final/ch3.ipynb`` (complete notebook) and ``draft/`` with one module: ``draft`` graded (a
  notebook does not count towards "complete"), and the remark says so;
- two zips, ``a.zip`` with one module and ``b.zip`` with all seven: the first zip alone, no remark;
- a complete ``x.zip`` and a folder ``old/`` with one module: the folder alone, no remark.

Each place is now measured by the modules the grader recognises in it; the most complete is graded
(a tie: the first found, shallowest then in name order) and a remark names it and the others.

As `tests/test_platform_uploads.py`, the grading is stopped where the platform's entry point says
what it grades (no sandbox runs)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import grader.run
from grader.classroom.deployment import grade_upload, holds_submission
from grader.records import MODULES
from tests.test_platform_uploads import NOTEBOOK, SOLUTIONS, Stopped, _stop, zipped

FULL = {f"{m}.py": s.encode() for m, s in SOLUTIONS.items()}
PART = {"sec3_3_simple_attention.py": SOLUTIONS["sec3_3_simple_attention"].encode()}


def under(folder: str, files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"{folder}/{name}": data for name, data in files.items()}


LAYOUTS = {  # files, and the remark: the graded place (the upload's top level is ".") (the others)
    "notebook-and-old-folder": ({"ch3.ipynb": NOTEBOOK.encode(), **under("old", PART)}, ". (old)"),
    "final-notebook-and-draft-folder": (
        {**under("final", {"ch3.ipynb": NOTEBOOK.encode()}), **under("draft", PART)},
        "final (draft)",
    ),
    "partial-zip-first": ({"a.zip": zipped(PART), "b.zip": zipped(FULL)}, "b.zip (a.zip)"),
    "zip-and-old-folder": ({"x.zip": zipped(FULL), **under("old", PART)}, "x.zip (old)"),
    "two-complete-folders-tie": ({**under("b", FULL), **under("a", FULL)}, "a (b)"),
    "deeper-complete-folder": ({**under("top", PART), **under("top/inner/deep", FULL)}, "top/inner/deep (top)"),
}


def graded(monkeypatch, files: dict[str, bytes]):
    monkeypatch.setattr(grader.run, "run_grading", _stop)
    with tempfile.TemporaryDirectory() as base:
        root = Path(base) / "submission"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        with pytest.raises(Stopped) as stopped:
            grade_upload(root, lang="en")
    [submission] = stopped.value.submissions
    return submission


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_complete_part_of_an_upload_is_graded_and_named(monkeypatch, layout):
    files, remark = LAYOUTS[layout]
    submission = graded(monkeypatch, files)
    assert set(submission.sources) == set(MODULES)
    assert [n.detail for n in submission.intake.remarks if n.kind == "upload-folder"] == [remark]


def test_a_zip_of_something_else_beside_the_modules_is_not_named(monkeypatch):
    submission = graded(monkeypatch, {**FULL, "pictures.zip": zipped({"a.png": b"png"})})
    assert set(submission.sources) == set(MODULES)
    assert [n for n in submission.intake.remarks if n.kind == "upload-folder"] == []


def test_an_upload_of_a_zip_beside_a_folder_of_other_files_has_something_to_grade(tmp_path):
    (tmp_path / "x.zip").write_bytes(zipped(FULL))
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "plot.png").write_bytes(b"png")
    assert holds_submission(tmp_path)
    (tmp_path / "x.zip").unlink()
    assert not holds_submission(tmp_path)
