"""The whole grading path, as instructors use it: stubs, the solutions and the example class."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.runner import grade
from tests.conftest import ROOT, solutions_as_submission, stubs_as_submission


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """One grading run over the example class plus the stubs and the solutions as students."""
    base = tmp_path_factory.mktemp("e2e")
    klass = shutil.copytree(ROOT / "examples" / "class", base / "class")
    stubs_as_submission(klass / "stubs")
    solutions_as_submission(klass / "solutions")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}, base / "reports"


def failing(result) -> dict[str, tuple[str, str | None]]:
    return {t.id: (t.status, t.misconception) for t in result.tests if t.status != "passed"}


def test_the_solutions_earn_full_marks_through_the_student_path(graded_class):
    results, _ = graded_class
    solution = results["solutions"]
    assert solution.max_score > 0
    assert solution.score == solution.max_score, failing(solution)
    assert all(t.misconception is None for t in solution.tests)


def test_the_stubs_score_zero_and_say_where_to_start(graded_class):
    results, _ = graded_class
    stubs = results["stubs"]
    assert stubs.score == 0
    assert {t.status for t in stubs.tests} == {"error"}
    first = stubs.tests[0]
    assert first.module == "sec3_3_simple_attention"
    assert first.error is not None and first.error.exc_type == "NotImplementedError"
    assert first.error.location is not None and first.error.location.file == "sec3_3_simple_attention.py"


def test_every_section_has_points(graded_class):
    results, _ = graded_class
    assert all(section.max_score > 0 for section in results["solutions"].sections)


def test_results_json_follows_the_contract(graded_class):
    results, reports = graded_class
    document = json.loads((reports / "bob" / "results.json").read_text())
    assert set(document) >= {"submission", "score", "max_score", "sections", "tests", "integrity"}
    assert [s["id"] for s in document["sections"]] == ["3.3", "3.4", "3.5", "3.6", "ex3.1", "ex3.2", "ex3.3"]
    for test in document["tests"]:
        assert set(test) >= {"id", "section", "points", "max_points", "status", "message", "misconception"}
        assert test["status"] in {"passed", "failed", "error", "timeout", "resource", "skipped"}
        module, _, name = test["id"].partition("::")
        assert module and name.startswith("test_")
    for name in ("feedback.html", "feedback.md"):
        assert (reports / "bob" / name).stat().st_size > 0
    assert (reports / "gradebook.csv").read_text().splitlines()[0].startswith("student,3.3,3.4,3.5,3.6,ex3.1,ex3.2,ex3.3,total")


def test_cli_grades_one_submission_and_prints_the_report_path(tmp_path):
    submission = solutions_as_submission(tmp_path / "me")
    run = subprocess.run([sys.executable, "-m", "grader", str(submission), "--out", str(tmp_path / "out"),
                          "--quiet", "--jobs", "1"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert str(tmp_path / "out" / "feedback.html") in run.stdout
    assert json.loads((tmp_path / "out" / "results.json").read_text())["submission"] == "me"


def test_cli_refuses_a_missing_path_with_a_clear_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "grader", str(tmp_path / "nowhere"), "--quiet"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    assert "does not exist" in run.stderr
