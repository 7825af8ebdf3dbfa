"""Round-four attack on Gradescope / PrairieLearn uploads (issue 36, point 4: "where it holds two
candidate folders, grade the one with the modules (or the more complete) and say which"). Honest
uploads that hold a complete submission beside a partial one get the partial one graded:

- a complete chapter notebook at the top and a folder ``old/`` with one module: 1 module graded,
  no remark;
- ``final/ch3.ipynb`` (complete notebook) and ``draft/`` with one module: ``draft`` graded (a
  notebook does not count towards "complete"), and the remark says so;
- two zips, ``a.zip`` with one module and ``b.zip`` with all seven: the first zip alone, no remark;
- a complete ``x.zip`` and a folder ``old/`` with one module: the folder alone, no remark.

As `tests/test_platform_uploads.py`, the grading is stopped where the platform's entry point says
what it grades (no sandbox runs)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import grader.run
from grader.classroom.deployment import grade_upload
from grader.records import MODULES
from tests.test_platform_uploads import NOTEBOOK, SOLUTIONS, Stopped, _stop, zipped

FULL = {f"{m}.py": s.encode() for m, s in SOLUTIONS.items()}
PART = {"sec3_3_simple_attention.py": SOLUTIONS["sec3_3_simple_attention"].encode()}


def under(folder: str, files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"{folder}/{name}": data for name, data in files.items()}


LAYOUTS = {
    "notebook-and-old-folder": {"ch3.ipynb": NOTEBOOK.encode(), **under("old", PART)},
    "final-notebook-and-draft-folder": {**under("final", {"ch3.ipynb": NOTEBOOK.encode()}), **under("draft", PART)},
    "partial-zip-first": {"a.zip": zipped(PART), "b.zip": zipped(FULL)},
    "zip-and-old-folder": {"x.zip": zipped(FULL), **under("old", PART)},
}


@pytest.mark.xfail(strict=True, reason="the partial part of an upload is graded (1 of 7 modules)")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_complete_part_of_an_upload_is_graded(monkeypatch, layout):
    monkeypatch.setattr(grader.run, "run_grading", _stop)
    with tempfile.TemporaryDirectory() as base:
        root = Path(base) / "submission"
        for name, data in LAYOUTS[layout].items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        with pytest.raises(Stopped) as stopped:
            grade_upload(root, lang="en")
    [submission] = stopped.value.submissions
    assert set(submission.sources) == set(MODULES)
