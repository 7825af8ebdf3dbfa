"""The nbgrader course end to end, through the real nbgrader CLI and a real gradebook database.

generate_assignment -> three students hand in (correct, buggy, hostile) -> autograde ->
generate_feedback -> export. The gradebook must hold the scores the kit's own path gives for the
same notebooks, and no feedback file may show the hidden part of a test cell.
"""
from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from grader.classroom.nbgrader_course import BOOK_ORDER, NOTEBOOK_NAME  # noqa: E402
from grader.records import MODULE_SECTIONS  # noqa: E402
from grader.runner import grade  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.nbgrader
ASSIGNMENT = "ch3"
NBGRADER = [sys.executable, "-m", "nbgrader"]

# The hostile student: every solution left as a stub, and in the kernel a fake grader module
# that makes each hidden test "pass" with full points, stderr noise, and a printed score.
HOSTILE_CELL = '''import os, sys, types
open(os.environ["KIT_E2E_MARKER"], "w").write("the student's code ran in nbgrader's kernel")
fake = types.ModuleType("grader.classroom.nbgrader_course")
def grade_cells(module, points=0, lang="en"):
    print("all tests passed")
    return points
fake.grade_cells = grade_cells
sys.modules["grader.classroom.nbgrader_course"] = fake
print("noise", file=sys.stderr)
63.0
'''


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KIT_E2E_MARKER": str(course / "student-code-ran")}
    result = subprocess.run([*NBGRADER, *args, f"--CourseDirectory.root={course}"], cwd=course,
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def _strip_markers(code: str) -> str:
    return re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", code, flags=re.M)


def _student_notebook(source: dict, release: dict, edit) -> dict:
    """The released notebook with each solution cell filled in as `edit(module, solution_code)` says."""
    solved = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in source["cells"]}
    notebook = copy.deepcopy(release)
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            cell["source"] = edit(meta["grade_id"], _strip_markers(solved[meta["grade_id"]]), "".join(cell["source"]))
    return notebook


def correct(module, solution, stub):
    return solution


def buggy(module, solution, stub):
    if module == "sec3_3_simple_attention":  # softmax over the wrong dimension in 3.3.2
        changed = solution.replace("torch.softmax(attention_scores(inputs), dim=-1)",
                                   "torch.softmax(attention_scores(inputs), dim=0)")
        assert changed != solution
        return changed
    return solution


def hostile(module, solution, stub):
    return stub


@pytest.fixture(scope="module", params=["sandbox-only", "with-student-kernel"])
def course(request, tmp_path_factory):
    """The course as `grade nbgrader` writes it by default (student code runs only in the sandbox),
    and with --run-student-kernel (nbgrader also executes the notebooks, unsandboxed)."""
    base = tmp_path_factory.mktemp("nbgrader")
    course = base / "course"
    timings = {}
    started = time.perf_counter()
    flags = ["--run-student-kernel"] if request.param == "with-student-kernel" else []
    subprocess.run([sys.executable, "-m", "grader", "nbgrader", str(course), *flags], check=True, cwd=ROOT,
                   capture_output=True, timeout=300)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    timings["create+generate"] = time.perf_counter() - started

    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    release = json.loads((course / "release" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    for student, edit in {"alice": correct, "bob": buggy, "mallory": hostile}.items():
        notebook = _student_notebook(source, release, edit)
        if student == "mallory":
            notebook["cells"].insert(3, {"cell_type": "code", "id": "evil", "execution_count": None,
                                         "metadata": {}, "outputs": [], "source": HOSTILE_CELL})
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK_NAME}.ipynb").write_text(json.dumps(notebook))
        (folder / "timestamp.txt").write_text("2024-01-01 00:00:00.000000 UTC")

    started = time.perf_counter()
    nbgrader(course, "autograde", ASSIGNMENT)
    timings["autograde (3 students)"] = time.perf_counter() - started
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    nbgrader(course, "export")

    # The same notebooks through the kit's own path, in one run.
    klass = base / "class"
    for student in ("alice", "bob", "mallory"):
        shutil.copytree(course / "submitted" / student / ASSIGNMENT, klass / student)
    started = time.perf_counter()
    summary = grade(klass, base / "reports", jobs=2, force=True)
    timings["kit grade (3 notebooks)"] = time.perf_counter() - started
    print("nbgrader e2e timings:", {k: round(v, 1) for k, v in timings.items()})
    return course, {r.submission: r for r in summary.results}


def gradebook_scores(course: Path) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student_id: (s.score, s.max_score) for s in gb.assignment_submissions(ASSIGNMENT)}


def expected_cell_score(result, points: dict[str, float]) -> float:
    sections = {s.id: s for s in result.sections}
    total = 0.0
    for module in BOOK_ORDER:
        section = sections.get(MODULE_SECTIONS[module])
        if section and section.max_score:
            total += round(points[module] * section.score / section.max_score, 4)
    return total


def cell_points(course: Path) -> dict[str, float]:
    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    return {c["metadata"]["nbgrader"]["grade_id"].removeprefix("test_"): c["metadata"]["nbgrader"]["points"]
            for c in source["cells"] if c["metadata"].get("nbgrader", {}).get("grade")}


def test_gradebook_holds_the_kits_scores(course):
    course, kit = course
    scores = gradebook_scores(course)
    points = cell_points(course)
    max_total = sum(points.values())
    assert set(scores) == {"alice", "bob", "mallory"}
    assert scores["alice"] == pytest.approx((max_total, max_total))
    assert kit["alice"].score == kit["alice"].max_score
    assert 0 < scores["bob"][0] < max_total
    assert scores["bob"][0] == pytest.approx(expected_cell_score(kit["bob"], points), abs=1e-3)
    assert kit["bob"].score < kit["bob"].max_score


def test_the_hostile_kernel_cannot_forge_points(course):
    course, kit = course
    assert kit["mallory"].score == 0
    assert gradebook_scores(course)["mallory"][0] == 0


def test_student_code_runs_in_nbgraders_kernel_only_when_asked(course, request):
    course, _ = course
    ran = (course / "student-code-ran").exists()
    assert ran == (request.node.callspec.params["course"] == "with-student-kernel")


def test_export_agrees_with_the_gradebook(course):
    course, _ = course
    with open(course / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    scores = gradebook_scores(course)
    assert rows == pytest.approx({student: score for student, (score, _) in scores.items()})


def test_feedback_shows_the_kits_report_but_no_hidden_test_source(course):
    course, _ = course
    files = sorted((course / "feedback").rglob("*.html"))
    assert {f.parts[-3] for f in files} == {"alice", "bob", "mallory"}
    hidden = []
    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    for cell in source["cells"]:
        text = "".join(cell["source"])
        if "BEGIN HIDDEN TESTS" in text:
            hidden += [line.strip() for line in text.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                       .splitlines() if line.strip()]
    assert hidden
    for file in files:
        html = file.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in html
        for line in hidden:
            assert line not in html and line.replace('"', "&quot;") not in html, (file, line)
        assert "attention-kit-feedback" in html  # the kit's feedback is in the test cells
    bob = (course / "feedback" / "bob" / ASSIGNMENT / f"{NOTEBOOK_NAME}.html").read_text(encoding="utf-8")
    assert "❌" in bob


# -- fast checks of the pieces, without running nbgrader --------------------------------------------

def test_in_kernel_grading_fails_closed_under_autograde(monkeypatch):
    """Without the GradeWithKit preprocessor the hidden part must score 0, never full marks."""
    from grader.classroom.nbgrader_course import grade_cells

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(RuntimeError, match="preprocessor"):
        grade_cells("sec3_3_simple_attention", 9)


def course_config(course: Path) -> dict:
    namespace = {"get_config": lambda: _Config()}
    exec(compile((course / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"), namespace)
    return namespace["c"]


def test_by_default_student_code_never_runs_outside_the_sandbox(tmp_path):
    from nbgrader.preprocessors import Execute, SaveAutoGrades

    from grader.classroom.nbgrader_course import GradeWithKit, create_course

    create_course(tmp_path / "default")
    order = course_config(tmp_path / "default")["Autograde.autograde_preprocessors"]
    assert Execute not in order and order.index(GradeWithKit) < order.index(SaveAutoGrades)
    create_course(tmp_path / "kernel", run_student_kernel=True)
    order = course_config(tmp_path / "kernel")["Autograde.autograde_preprocessors"]
    assert order.index(Execute) < order.index(GradeWithKit) < order.index(SaveAutoGrades)


def test_course_config_handles_nbgraders_traps(tmp_path):
    from grader.classroom.nbgrader_course import create_course

    notebook = create_course(tmp_path / "course", points={m: 2.0 for m in BOOK_ORDER})
    c = course_config(tmp_path / "course")
    from nbgrader.preprocessors import ClearHiddenTests
    assert ClearHiddenTests in c["GenerateFeedback.preprocessors"]
    assert c["IgnorePattern.enabled"] is True and "Warning" in c["IgnorePattern.pattern"]
    cells = json.loads(notebook.read_text())["cells"]
    tests = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade")]
    assert [t["metadata"]["nbgrader"]["points"] for t in tests] == [2.0] * 7
    for test in tests:
        visible = "".join(test["source"]).split("### BEGIN HIDDEN TESTS")[0]
        assert "grade_cells" not in visible and not re.search(r"^\s*[\d.]+\s*$", visible, re.M)
    solutions = [c for c in cells if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(solutions) == 7
    assert all("### BEGIN SOLUTION" in "".join(c["source"]) for c in solutions)


class _Config(dict):
    """Just enough of traitlets' config object to read assignments like `c.A.b = v`."""

    def __getattr__(self, section):
        config = self

        class Section:
            def __setattr__(self, name, value):
                config[f"{section}.{name}"] = value

        return Section()
