"""The nbgrader course end to end, through the real nbgrader CLI and a real gradebook database.

grade nbgrader -> generate_assignment -> students hand in -> autograde -> generate_feedback ->
export, every command started as README says (nbgrader of the kit's venv by its path) in a clean
environment: no venv on PATH, an empty HOME, no PYTHONPATH. The students: a correct one, a buggy
one, a hostile one, one who deleted a test cell and one who deleted a solution cell. The gradebook
must hold the scores the kit's own path gives for the same notebooks; feedback speaks of the
notebook, never shows emoji (blank boxes without an emoji font) and autograde prints no noise.
`nbgrader validate` must tell the truth on blank, buggy and correct notebooks.
"""

from __future__ import annotations

import copy
import csv
import html
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from filelock import FileLock

pytest.importorskip("nbgrader")

from grader.classroom.nbgrader_autograde import BOOK_ORDER, NOTEBOOK_NAME
from grader.classroom.nbgrader_env import tools_dir
from grader.records import MODULE_SECTIONS
from grader.run import grade
from tests.conftest import forget_public_checks

pytestmark = pytest.mark.nbgrader
ASSIGNMENT = "ch3"
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
NOISE = ("Attribute 'checksum'", "SAWarning", "is not absolute", "Traceback")
EMOJI = re.compile("[\u2600-\u27bf\U0001f300-\U0001faff]")

# The hostile student: every solution left as a stub, and in the kernel a fake public-check module
# that makes each test cell "pass", stderr noise, and a printed score.
HOSTILE_CELL = """import os, sys, types
open(os.environ["KIT_E2E_MARKER"], "w").write("the student's code ran in nbgrader's kernel")
fake = types.ModuleType("ch3_checks")
def check_section(module, namespace, lang=None):
    print("all tests passed")
    return 100
fake.check_section = check_section
sys.modules["ch3_checks"] = fake
print("noise", file=sys.stderr)
63.0
"""


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A new user's shell: no venv on PATH, no PYTHONPATH, an empty HOME."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": CLEAN_PATH, "HOME": str(home), "LANG": "C.UTF-8", **extra}


def run(command: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`<venv>/bin/nbgrader ARGS` from the course folder, as README says, in a clean environment."""
    env = clean_env(course.parent / "home", KIT_E2E_MARKER=str(course / "student-code-ran"))
    return run([str(tools_dir() / "nbgrader"), *args], course, env, check)


def create_course(base: Path, *flags: str) -> Path:
    course = base / "course"
    result = run([str(tools_dir() / "grade"), "nbgrader", "course", *flags], base, clean_env(base / "home"))
    assert f"Next: cd course && {tools_dir() / 'nbgrader'} generate_assignment ch3" in result.stdout
    return course


def generated_course(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """At base/course, a copy of the course as `grade nbgrader course` and then `nbgrader
    generate_assignment ch3` leave it (the commands above, from a clean shell). The course is made once
    per test run, for every pytest-xdist worker (a lock in the run's shared temporary folder), and
    copied: nothing in it names its own folder (nbgrader's paths are relative to the course)."""
    run_folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_folder = run_folder.parent  # shared by the workers of this run
    made = run_folder / "nbgrader-generated"
    with FileLock(str(run_folder / "nbgrader-generated.lock")):
        if not (made / "course" / "release" / ASSIGNMENT).is_dir():
            shutil.rmtree(made, ignore_errors=True)
            made.mkdir()
            nbgrader(create_course(made), "generate_assignment", ASSIGNMENT)
            shutil.rmtree(made / "home")
    shutil.copytree(made / "course", base / "course", symlinks=True)
    return base / "course"


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
        changed = solution.replace(
            "torch.softmax(attention_scores(inputs), dim=-1)", "torch.softmax(attention_scores(inputs), dim=0)"
        )
        assert changed != solution
        return changed
    return solution


# carol: two mistakes in two sections, as examples/class/carol (the mask also hides the diagonal in
# 3.5; the heads merged without transposing back in 3.6): (module, the line as written, as changed)
TWO_MISTAKES = {
    "sec3_5_causal_attention": (
        '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)',
        '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)',
    ),
    "sec3_6_multi_head_attention": (
        "context_vec = (attn_weights @ values).transpose(1, 2)",
        "context_vec = attn_weights @ values",
    ),
}


def two_mistakes(module, solution, stub):
    if module in TWO_MISTAKES:
        right, wrong = TWO_MISTAKES[module]
        lines = solution.split("\n")
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(right))
        lines[at] = lines[at].replace(right, wrong)
        return "\n".join(lines)
    return solution


def hostile(module, solution, stub):
    return stub


def without(grade_id: str, notebook: dict) -> dict:
    cells = [c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != grade_id]
    assert len(cells) == len(notebook["cells"]) - 1
    return {**notebook, "cells": cells}


def read_notebooks(course: Path) -> tuple[dict, dict]:
    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    release = json.loads((course / "release" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    return source, release


def hand_in(course: Path, student: str, notebook: dict) -> Path:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    path = folder / f"{NOTEBOOK_NAME}.ipynb"
    path.write_text(json.dumps(notebook))
    (folder / "timestamp.txt").write_text("2024-01-01 00:00:00.000000 UTC")
    return path


@pytest.fixture(scope="module", params=["sandbox-only", "with-student-kernel"])
def course(request, tmp_path_factory):
    """The course as `grade nbgrader` writes it by default (student code runs only in the sandbox),
    and with --run-student-kernel (nbgrader also executes the notebooks, unsandboxed)."""
    base = tmp_path_factory.mktemp("nbgrader")
    timings = {}
    started = time.perf_counter()
    if request.param == "with-student-kernel":
        course = create_course(base, "--run-student-kernel")
        nbgrader(course, "generate_assignment", ASSIGNMENT)
    else:
        course = generated_course(base, tmp_path_factory)
    timings["create+generate"] = time.perf_counter() - started

    source, release = read_notebooks(course)
    students = {
        "alice": _student_notebook(source, release, correct),
        "bob": _student_notebook(source, release, buggy),
        "carol": _student_notebook(source, release, two_mistakes),
        "mallory": _student_notebook(source, release, hostile),
        # deleted the test cell of 3.5 (code correct) and the solution cell of 3.6
        "dora": without("test_sec3_5_causal_attention", _student_notebook(source, release, correct)),
        "sam": without("sec3_6_multi_head_attention", _student_notebook(source, release, correct)),
    }
    students["mallory"]["cells"].insert(
        3,
        {
            "cell_type": "code",
            "id": "evil",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": HOSTILE_CELL,
        },
    )
    for student, notebook in students.items():
        hand_in(course, student, notebook)

    started = time.perf_counter()
    autograde = nbgrader(course, "autograde", ASSIGNMENT)
    timings[f"autograde ({len(students)} students)"] = time.perf_counter() - started
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    nbgrader(course, "export")

    # The same notebooks through the kit's own path, in one run.
    klass = base / "class"
    for student in students:
        shutil.copytree(course / "submitted" / student / ASSIGNMENT, klass / student)
    started = time.perf_counter()
    summary = grade(klass, base / "reports", jobs=2, force=True)
    timings[f"kit grade ({len(students)} notebooks)"] = time.perf_counter() - started
    print("nbgrader e2e timings:", {k: round(v, 1) for k, v in timings.items()})
    return course, {r.submission: r for r in summary.results}, autograde.stdout + autograde.stderr


def gradebook_scores(course: Path) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student_id: (s.score, s.max_score) for s in gb.assignment_submissions(ASSIGNMENT)}


def cell_grades(course: Path, student: str) -> dict[str, tuple[float | None, bool]]:
    """grade_id -> (auto score, needs manual grade) of a student's test cells."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(NOTEBOOK_NAME, ASSIGNMENT, student)
        return {g.name: (g.auto_score, g.needs_manual_grade) for g in notebook.grades}


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
    return {
        c["metadata"]["nbgrader"]["grade_id"].removeprefix("test_"): c["metadata"]["nbgrader"]["points"]
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade")
    }


def feedback(course: Path, student: str) -> str:
    return (course / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK_NAME}.html").read_text(encoding="utf-8")


def test_gradebook_holds_the_kits_scores(course):
    course, kit, _ = course
    scores = gradebook_scores(course)
    points = cell_points(course)
    max_total = sum(points.values())
    assert set(scores) == {"alice", "bob", "carol", "mallory", "dora", "sam"}
    assert scores["alice"] == pytest.approx((max_total, max_total))
    assert kit["alice"].score == kit["alice"].max_score
    assert 0 < scores["bob"][0] < max_total
    assert scores["bob"][0] == pytest.approx(expected_cell_score(kit["bob"], points), abs=1e-3)
    assert kit["bob"].score < kit["bob"].max_score


def test_the_hostile_kernel_cannot_forge_points(course):
    course, kit, _ = course
    assert kit["mallory"].score == 0
    assert gradebook_scores(course)["mallory"][0] == 0


def test_student_code_runs_in_nbgraders_kernel_only_when_asked(course, request):
    course, _, _ = course
    ran = (course / "student-code-ran").exists()
    assert ran == (request.node.callspec.params["course"] == "with-student-kernel")


def test_a_deleted_test_cell_is_put_back_and_graded(course):
    course, kit, _ = course
    grades = cell_grades(course, "dora")
    points = cell_points(course)
    assert grades["test_sec3_5_causal_attention"] == (points["sec3_5_causal_attention"], False)
    assert not any(needs_manual for _, needs_manual in grades.values())
    assert gradebook_scores(course)["dora"][0] == pytest.approx(sum(points.values()))
    assert "it had been deleted" in feedback(course, "dora")


def test_a_deleted_solution_cell_is_explained_in_notebook_terms(course):
    course, kit, _ = course
    grades = cell_grades(course, "sam")
    assert grades["test_sec3_6_multi_head_attention"] == (0, False)
    html = feedback(course, "sam")
    assert "no code for 3.6" in html and "# module: sec3_6_multi_head_attention" in html
    assert "sec3_6_multi_head_attention.py is missing" not in html  # neither for 3.6 nor for the exercises using it


def test_autograde_prints_no_noise(course):
    _, _, output = course
    assert [noise for noise in NOISE if noise in output] == [], output[-4000:]


def test_export_agrees_with_the_gradebook(course):
    course, _, _ = course
    with open(course / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    scores = gradebook_scores(course)
    assert rows == pytest.approx({student: score for student, (score, _) in scores.items()})


def test_feedback_shows_the_kits_report_in_any_font(course):
    course, _, _ = course
    files = sorted((course / "feedback").rglob("*.html"))
    assert {f.parts[-3] for f in files} == {"alice", "bob", "carol", "mallory", "dora", "sam"}
    for file in files:
        html = file.read_text(encoding="utf-8")
        assert "attention-kit-feedback" in html  # the kit's feedback is in the test cells
        kit_parts = re.findall(r'<div class="attention-kit-feedback".*?</div>', html, flags=re.S)
        assert kit_parts and not any(EMOJI.search(part) for part in kit_parts), file
    bob = feedback(course, "bob")
    assert re.search(r'<svg[^>]*aria-label="failed"', bob) and re.search(r'<svg[^>]*aria-label="passed"', bob)


def test_feedback_carries_the_whole_diagnosis_under_each_test_cell(course):
    """carol's two mistakes, as nbgrader's feedback page shows them: where to go next at the top;
    under the test cell of each section, the code cell (numbered as Jupyter users count cells) and
    line with the code, the likely cause with its hint, expected and actual values, the weights."""
    from grader.i18n import Catalog

    course, _, _ = course
    catalog = Catalog("en")
    page = feedback(course, "carol")
    overview, first_test = page.index("attention-kit-overview"), page.index('name="test_sec3_3_simple_attention"')
    assert overview < first_test and catalog.t("report.next-step-title") in page[overview:first_test]
    submitted = json.loads((course / "submitted" / "carol" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    code_cells = [c for c in submitted["cells"] if c["cell_type"] == "code"]
    causes = {"sec3_5_causal_attention": "mask-includes-diagonal", "sec3_6_multi_head_attention": "heads-merged-wrong"}
    # the line the diagnosis names: 3.5's changed line; in 3.6 the untransposed heads still pass
    # through the reference's "context" (the product before its transpose) and depart where merged
    located = {
        "sec3_5_causal_attention": TWO_MISTAKES["sec3_5_causal_attention"][1],
        "sec3_6_multi_head_attention": "context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)",
    }
    for module, wrong in located.items():
        number, cell = next(
            (n, c) for n, c in enumerate(code_cells, 1) if c["metadata"].get("nbgrader", {}).get("grade_id") == module
        )
        line = next(i for i, text in enumerate("".join(cell["source"]).split("\n"), 1) if wrong in text)
        start = page.index(f'name="test_{module}"')
        section = page[start : page.find("<a name=", start + 1)]  # up to the next cell of nbgrader's
        assert re.search(rf"{NOTEBOOK_NAME}\.ipynb</code>, code cell {number}, line {line}, in ", section), module
        shown = html.unescape(section)  # jinja2 writes a quote as &#34;, html.escape as &quot;
        assert re.search(rf'<code class="ak-code">\s*{re.escape(wrong)}', shown), module  # the line, as code
        assert catalog.t(f"misconceptions.{causes[module]}.hint") in shown
        assert "<table" in section and catalog.t("report.table.expected") in section
    assert "<svg" in page[page.index('name="test_sec3_5_causal_attention"') :]


# -- nbgrader validate tells the truth ----------------------------------------------------------------


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    return generated_course(tmp_path_factory.mktemp("validate"), tmp_path_factory)


def validate(course: Path, notebook: dict | None, name: str) -> str:
    """`nbgrader validate` of a student's copy of the released folder (the public checks sit beside it)."""
    folder = course.parent / name
    shutil.copytree(course / "release" / ASSIGNMENT, folder)
    if notebook is not None:
        (folder / f"{NOTEBOOK_NAME}.ipynb").write_text(json.dumps(notebook))
    result = nbgrader(course, "validate", str(folder / f"{NOTEBOOK_NAME}.ipynb"))
    assert "..." not in result.stdout  # no line of the public checks' report was cut off
    return " ".join(result.stdout.split())  # lines wrapped to validate's width, joined again


def test_validate_fails_a_blank_notebook_with_where_to_start(released):
    out = validate(released, None, "blank")
    assert "Success" not in out and "VALIDATION FAILED ON 7 CELL(S)" in out
    assert "Start here -> attention_scores_for_query still raises NotImplementedError (cell In[" in out
    assert out.count("Start here ->") == 7  # one per section, on the check its "Next:" names
    assert "Next: attention_scores_for_query(inputs, 2)" in out  # where every channel starts: 3.3's first function


def test_validate_fails_a_buggy_notebook_with_the_reason(released):
    source, release = read_notebooks(released)
    out = validate(released, _student_notebook(source, release, buggy), "buggy")
    assert "VALIDATION FAILED ON 1 CELL(S)" in out
    assert re.search(r"attention_weights\(inputs\)\.sum\(dim=-1\): expected \[1, 1, 1, 1, 1, 1\], got \[", out), out


def test_validate_passes_a_correct_notebook(released):
    source, release = read_notebooks(released)
    out = validate(released, _student_notebook(source, release, correct), "correct")
    assert "Success! Your notebook passes all the tests." in out


# -- a failed first step does not break the next ----------------------------------------------------


def test_a_half_made_gradebook_is_completed(tmp_path):
    """What nbgrader left behind when it could not find `alembic`: tables without a schema version,
    which `nbgrader db upgrade` could never migrate. The course's config completes it."""
    course = create_course(tmp_path)
    made = run(
        [sys.executable, "-c", "from nbgrader.api import Gradebook; Gradebook('sqlite:///gradebook.db')"],
        course,
        {"PATH": str(tmp_path / "nowhere"), "HOME": str(tmp_path)},
        check=False,
    )
    assert made.returncode != 0 and "alembic" in made.stderr
    with sqlite3.connect(course / "gradebook.db") as db:
        assert "alembic_version" not in {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    nbgrader(course, "db", "upgrade")
    with sqlite3.connect(course / "gradebook.db") as db:
        assert len(db.execute("SELECT version_num FROM alembic_version").fetchall()) == 1


# -- fast checks of the pieces, without running nbgrader --------------------------------------------


def test_public_checks_fail_closed_under_autograde(monkeypatch, tmp_path):
    """Without the GradeWithKit preprocessor a test cell must score 0, never full marks."""
    from grader.classroom.release import write_public_checks

    write_public_checks(tmp_path, "en")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    import ch3_checks

    try:
        with pytest.raises(RuntimeError, match="preprocessor"):
            ch3_checks.check_section("sec3_3_simple_attention", {})
    finally:
        forget_public_checks()


def course_config(course: Path, monkeypatch) -> dict:
    """The config's settings, read as nbgrader reads the file (what it does to PATH and warnings is undone)."""
    namespace = {"get_config": lambda: _Config(), "__file__": str(course / "nbgrader_config.py")}
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))
    with warnings.catch_warnings():
        exec(compile((course / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"), namespace)
    assert os.environ["PATH"].split(os.pathsep)[0] == str(tools_dir())
    return namespace["c"]


def test_by_default_student_code_never_runs_outside_the_sandbox(tmp_path, monkeypatch):
    from nbgrader.preprocessors import Execute, SaveAutoGrades

    from grader.classroom.nbgrader_autograde import GradeWithKit
    from grader.classroom.nbgrader_course import create_course

    points = {m: 2.0 for m in BOOK_ORDER}
    create_course(tmp_path / "default", points=points)
    order = course_config(tmp_path / "default", monkeypatch)["Autograde.autograde_preprocessors"]
    assert Execute not in order and order.index(GradeWithKit) < order.index(SaveAutoGrades)
    create_course(tmp_path / "kernel", run_student_kernel=True, points=points)
    order = course_config(tmp_path / "kernel", monkeypatch)["Autograde.autograde_preprocessors"]
    assert order.index(Execute) < order.index(GradeWithKit) < order.index(SaveAutoGrades)


def test_course_config_handles_nbgraders_traps(tmp_path, monkeypatch):
    from grader.classroom.nbgrader_course import create_course

    notebook = create_course(tmp_path / "course", points={m: 2.0 for m in BOOK_ORDER})
    c = course_config(tmp_path / "course", monkeypatch)
    assert c["CourseDirectory.root"] == str((tmp_path / "course").resolve())
    assert c["IgnorePattern.enabled"] is True and "Warning" in c["IgnorePattern.pattern"]
    cells = json.loads(notebook.read_text())["cells"]
    tests = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade")]
    assert [t["metadata"]["nbgrader"]["points"] for t in tests] == [2.0] * 7
    for test in tests:  # visible checks only: nothing for nbgrader to hide, restore or warn about
        source = "".join(test["source"])
        assert "HIDDEN" not in source and "check_section(" in source
        assert not re.search(r"^\s*[\d.]+\s*$", source, re.M)
    solutions = [c for c in cells if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(solutions) == 7
    assert all("### BEGIN SOLUTION" in "".join(c["source"]) for c in solutions)
    assert {p.name for p in notebook.parent.iterdir()} == {
        f"{NOTEBOOK_NAME}.ipynb",
        "ch3_checks.py",
        "ch3_check_list.py",
        "ch3_check_tools.py",
        "ch3_check_values.py",  # the public checks of every function's values (issue 25)
        "ch3_check_sections.py",  # the kit's manifest of the sections, which the check lists read
        "ch3_check_diagnosis.py",  # the cause a public check reveals
        "ch3_check_trace.py",  # the line where the computation departs
        "check_expected.json",  # the public probes' expected values
        "check_messages.json",
        "check_report.txt.j2",
    }


def test_cell_feedback_names_no_emoji_and_speaks_of_the_notebook():
    from grader.classroom.nbgrader_feedback import cell_feedback_html
    from grader.i18n import Catalog
    from grader.records import GradeResult, IntegrityNote, ProbeError, SectionScore, TestOutcome

    module = "sec3_6_multi_head_attention"
    for lang in ("en", "zh"):
        catalog = Catalog(lang)
        missing = ProbeError(
            "import", "ModuleNotFoundError", module=module, key="import.missing", params={"module": module}
        )
        result = GradeResult(
            "s",
            "hash",
            0.0,
            4.0,
            [SectionScore("3.6", "3.6", 0.0, 4.0)],
            [TestOutcome(f"{module}::test_shape", module, "test_shape", "3.6", "error", 0.0, 4.0, error=missing)],
            [IntegrityNote("submission.notebook-not-json", "x.ipynb (1:2)")],
        )
        html = cell_feedback_html(result, module, catalog, missing={module}, restored=True)
        assert not EMOJI.search(html)
        assert "# module: sec3_6_multi_head_attention" in html
        assert catalog.t("import.missing", module=module) not in html
        assert catalog.t("classroom.nbgrader.cell-restored") in html


class _Config(dict):
    """Just enough of traitlets' config object to read assignments like `c.A.b = v`."""

    def __getattr__(self, section):
        config = self

        class Section:
            def __setattr__(self, name, value):
                config[f"{section}.{name}"] = value

        return Section()


def test_the_config_never_fails_over_a_gradebook_it_cannot_read(tmp_path, monkeypatch):
    from grader.classroom.nbgrader_env import complete_gradebook, prepare_nbgrader

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (tmp_path / "gradebook.db").write_bytes(b"not a database at all")
    with warnings.catch_warnings():
        assert prepare_nbgrader(tmp_path / "nbgrader_config.py") == str(tmp_path.resolve())
    assert os.environ["PATH"] == os.pathsep.join([str(tools_dir()), "/usr/bin", "/bin"])
    with sqlite3.connect(tmp_path / "other.db") as db:  # some other database: left alone
        db.execute("CREATE TABLE notes (text TEXT)")
    assert complete_gradebook(tmp_path / "other.db") is False
    assert complete_gradebook(tmp_path / "missing.db") is False
