"""Hostile uploads through Gradescope's and PrairieLearn's entry points, in their layouts
(/autograder/submission -> /autograder/results/results.json; /grade/student -> /grade/results/
results.json): whatever the upload holds, the entry point exits 0 with a valid results.json and a
clear message naming what could not be graded, and grades the rest of the upload.

One upload holds a hostile file for every module at once (a chapter notebook with copy-pasted,
duplicated and forged nbgrader cells, an nbformat 3 notebook, a 0-byte file, a link to a host file,
a FIFO, a notebook over the size cap, binary garbage, a damaged notebook, folders named like a
module, zip-like junk); the others are what a platform sees when nothing can be graded.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from grader.classroom import gradescope, prairielearn
from grader.classroom.feedback_channels import section_label
from grader.i18n import Catalog
from grader.records import MODULE_SECTIONS, MODULES
from tests.conftest import ROOT, solutions_as_submission
from tests.test_prairielearn import check_results as check_prairielearn

S33, S34, EX31, S35, S36, EX32, EX33 = MODULES
JUNK = bytes(range(256)) * 64


def _notebook(cells: list[dict], **top) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **top})


def _cell(source: str, **metadata) -> dict:
    return {"cell_type": "code", "execution_count": None, "outputs": [], "metadata": metadata, "source": source}


def _solution(module: str) -> str:
    return (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")


def hostile_upload(folder: Path) -> dict[str, str]:
    """Every module's file is hostile in its own way; returns module -> the file that is it."""
    folder.mkdir(parents=True)
    (folder / f"{S34}.ipynb").write_text(
        json.dumps(
            {  # nbformat 3, correct: graded
                "nbformat": 3,
                "nbformat_minor": 0,
                "metadata": {},
                "worksheets": [
                    {
                        "cells": [
                            {
                                "cell_type": "code",
                                "input": _solution(S34),
                                "language": "python",
                                "outputs": [],
                                "metadata": {},
                            }
                        ]
                    }
                ],
            }
        )
    )
    (folder / f"{EX31}.py").write_bytes(b"")  # 0 bytes
    (folder / f"{S35}.py").symlink_to("/etc/passwd")  # a link to a host file
    os.mkfifo(folder / f"{S36}.py")  # a FIFO: reading it must not wait for a writer
    (folder / f"{S36}.ipynb").write_text(_notebook([_cell("x = 1")]) + " " * (9 * 2**20))  # over 8 MB
    (folder / f"{EX32}.py").write_bytes(b"\x00\xff\xfe" + JUNK)  # binary garbage
    (folder / f"{EX32}.ipynb").write_text(_notebook([_cell(_solution(EX32))])[:-30])  # damaged JSON
    (folder / f"{EX33}.py").mkdir()  # a folder named like a module
    (folder / f"{EX33}.ipynb").mkdir()  # and a notebook of the same name that is a folder
    test_meta = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": f"test_{S33}",
        "points": 1000,
        "schema_version": 3,
    }
    test_cell = f"from ch3_checks import check_section\ncheck_section('{S33}', globals())"
    (folder / "chapter.ipynb").write_text(
        _notebook(
            [  # 3.3 from a chapter notebook, with nbgrader debris
                _cell("import torch\nimport torch.nn as nn", nbgrader="corrupted"),
                _cell(
                    f"# module: {S33}\n" + _solution(S33), nbgrader={"grade": True, "solution": True, "points": 1000}
                ),
                _cell(test_cell, nbgrader=test_meta),
                _cell(test_cell, nbgrader=test_meta),  # copy-pasted
                _cell(test_cell),  # the same, its metadata lost
                _cell(f"# module: {S33}\n" + _solution(S33), nbgrader=[1, 2]),  # duplicated cell
            ]
        )
    )
    (folder / "submission.zip").write_bytes(b"PK\x03\x04" + JUNK)  # zip-like junk
    return {
        "link": f"{S35}.py",
        "fifo": f"{S36}.py",
        "too large": f"{S36}.ipynb",
        "damaged": f"{EX32}.ipynb",
        "folder": f"{EX33}.py",
        "folder notebook": f"{EX33}.ipynb",
    }


def unreadable_only(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "chapter.ipynb").write_bytes(b'{"cells": [{"cell_type": "code", "source": "x = ')


def junk_only(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "submission.zip").write_bytes(b"PK\x03\x04" + JUNK)
    (folder / "notes.txt").write_bytes(b"")
    (folder / "work").symlink_to(solutions_as_submission(folder.parent / "elsewhere"), target_is_directory=True)


def check_gradescope(results: dict) -> None:
    """Gradescope's results.json: a finite score, a message, tests with scores within their maximum."""
    assert isinstance(results["score"], float) and math.isfinite(results["score"])
    assert isinstance(results["output"], str) and results["output"]
    for test in results["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
        assert 0 <= test["score"] <= test["max_score"]
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    assert len(json.dumps(results, indent=2, ensure_ascii=False).encode()) <= gradescope.MAX_RESULTS_BYTES


def run_gradescope(tmp_path: Path, upload) -> tuple[dict, object]:
    root = tmp_path / "autograder"
    root.mkdir()
    made = upload(root / "submission")
    assert gradescope.main(["run", "--root", str(root)]) == 0
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    check_gradescope(results)
    return results, made


def run_prairielearn(tmp_path: Path, upload) -> tuple[dict, object]:
    root = tmp_path / "grade"
    (root / "tests").mkdir(parents=True)
    made = upload(root / "student")
    assert prairielearn.main(["run", "--root", str(root)]) == 0
    raw = (root / "results" / "results.json").read_bytes()
    results = json.loads(raw)
    check_prairielearn(results, raw)
    return results, made


def _tests_of(results: dict, module: str, key: str) -> list[dict]:
    return [t for t in results["tests"] if t[key].startswith(module)]


def test_gradescope_grades_what_it_can_of_a_hostile_upload_and_names_the_rest(tmp_path):
    results, files = run_gradescope(tmp_path, hostile_upload)

    def tests_of(module: str) -> list[dict]:  # a Gradescope test's number is its book section ("3.3", "Ex. 3.1")
        return [t for t in results["tests"] if t["number"] == section_label(MODULE_SECTIONS[module], Catalog("en"))]

    for module in (S33, S34):  # the chapter notebook's 3.3 and the nbformat 3 notebook: full marks
        tests = tests_of(module)
        assert tests and all(t["score"] == t["max_score"] for t in tests), module
    for module in (EX31, S35, S36, EX32, EX33):
        tests = tests_of(module)
        assert tests and all(t["score"] == 0 for t in tests), module
    for name in files.values():
        assert name in results["output"], name
    assert results["score"] < 1000  # nothing of the forged points


def test_prairielearn_grades_what_it_can_of_a_hostile_upload_and_names_the_rest(tmp_path):
    results, files = run_prairielearn(tmp_path, hostile_upload)
    assert results["gradable"] is True and 0 < results["score"] < 1
    text = results["output"] + results["message"] + " ".join(t["message"] + t["output"] for t in results["tests"])
    for name in files.values():
        assert name in text, name


@pytest.mark.parametrize("entry", ["gradescope", "prairielearn"])
def test_an_upload_with_only_a_damaged_notebook_says_so(tmp_path, entry):
    if entry == "gradescope":
        results, _ = run_gradescope(tmp_path, unreadable_only)
        assert results["score"] == 0 and "chapter.ipynb" in results["output"] and "not valid JSON" in results["output"]
    else:
        results, _ = run_prairielearn(tmp_path, unreadable_only)
        assert results["gradable"] is False
        assert any("chapter.ipynb" in e and "not valid JSON" in e for e in results["format_errors"])


@pytest.mark.parametrize("entry", ["gradescope", "prairielearn"])
def test_an_upload_of_junk_and_links_has_nothing_to_grade(tmp_path, entry):
    # the damaged zip is what the student handed in: the feedback names it (as for a zip alone)
    damaged = "`submission.zip` is not a zip file that can be read"
    if entry == "gradescope":
        results, _ = run_gradescope(tmp_path, junk_only)
        assert results["score"] == 0 and damaged in results["output"]
    else:
        results, _ = run_prairielearn(tmp_path, junk_only)
        assert results["gradable"] is False and damaged in results["format_errors"][0]


@pytest.mark.parametrize("entry", ["gradescope", "prairielearn"])
@pytest.mark.parametrize("upload", ["missing", "a-file", "a-link"])
def test_an_upload_folder_that_is_not_one_has_nothing_to_grade(tmp_path, entry, upload):
    def make(folder: Path) -> None:
        if upload == "a-file":
            folder.write_bytes(JUNK)
        elif upload == "a-link":
            folder.symlink_to(solutions_as_submission(folder.parent / "elsewhere"), target_is_directory=True)

    results, _ = (run_gradescope if entry == "gradescope" else run_prairielearn)(tmp_path, make)
    if entry == "gradescope":
        assert results["score"] == 0 and "No Chapter 3 module" in results["output"]
    else:
        assert results["gradable"] is False and "No Chapter 3 module" in results["format_errors"][0]


def test_hostile_files_leave_the_upload_as_it_was(tmp_path):
    """Grading reads; it never follows the link to write, nor deletes or empties what it refused."""
    passwd = Path("/etc/passwd").read_bytes()
    _, files = run_gradescope(tmp_path, hostile_upload)
    upload = tmp_path / "autograder" / "submission"
    assert Path("/etc/passwd").read_bytes() == passwd
    assert (upload / files["folder"]).is_dir() and (upload / files["link"]).is_symlink()
    assert (upload / f"{EX32}.py").read_bytes().startswith(b"\x00\xff\xfe")
    shutil.rmtree(tmp_path / "autograder")
