"""An nbgrader course for Chapter 3, graded by the kit.

`create_course(COURSE_DIR)` writes ``nbgrader_config.py`` and the source notebook
``source/<assignment>/ch3_attention.ipynb`` (both rendered from templates/nbgrader/): one
notebook for the chapter, as the book's own ch03.ipynb, with per section a solution cell (the
stub's code, each body between ``### BEGIN SOLUTION`` / ``### END SOLUTION``) and an autograded
test cell worth that section's points in the hidden suites. The test cell's hidden part calls
`grade_cells(module, points)`.

Who runs student code. By default the course's config drops nbgrader's Execute preprocessor from
``nbgrader autograde``: student code then runs only in the kit's sandbox, never as the grading
user (``grade nbgrader --run-student-kernel`` keeps Execute, for feedback with the students' own
outputs, at the price of an unsandboxed kernel).

Who decides the score. nbgrader runs the hidden part inside the student's own kernel, after the
student's code: there the student can replace any function, module or output. So in
``nbgrader autograde`` the score never comes from the kernel. The course's config adds the
`GradeWithKit` preprocessor (after Execute, when that runs): in the trusted nbgrader process it
grades the notebook's code through the kit's sandboxed path (`grader.runner.grade`, the same as
``grade`` on the command line) and *replaces* each test cell's outputs with the kit's HTML
feedback plus the section's points as the cell's value (nbgrader's partial credit). In the
kernel, under autograde, `grade_cells` raises: if the preprocessor is missing from the config,
every test cell scores 0 (fail closed) instead of full marks. Outside autograde (instructors
running ``nbgrader validate`` on the source, or anyone running the notebook) `grade_cells` grades
the saved notebooks of the working folder in a fresh ``python -m grader`` process and shows the
same feedback.

The nbgrader traps this handles: ``ClearHiddenTests`` in ``GenerateFeedback.preprocessors`` (the
feedback would show the hidden part), ``IgnorePattern`` for torch's warnings on stderr (any stderr
in a test cell scores 0), points as the test cell's value only ever written by the preprocessor,
and ``nbgrader validate`` exiting 0 on failure (check its output, not its exit status).
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from functools import lru_cache
from pathlib import Path
from typing import Any

from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.records import MODULE_SECTIONS, MODULES

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_NAME = "ch3_attention"
BOOK_ORDER = ("sec3_3_simple_attention", "sec3_4_self_attention", "exercise3_1_weight_transfer",
              "sec3_5_causal_attention", "sec3_6_multi_head_attention", "exercise3_2_two_dim_output",
              "exercise3_3_gpt2_attention")
TEST_GRADE_ID = "test_{module}"
SIBLING_IMPORT = re.compile(r"^from (sec3_\w+|exercise3_\w+) import .*$\n?", re.MULTILINE)


# ------------------------------------------------------------------------------------------------
# Points and notebook sources
# ------------------------------------------------------------------------------------------------

def suite_points() -> dict[str, float]:
    """Module -> the points its hidden tests are worth (collected, not run)."""
    import pytest

    from grader.suites.plugin import GradingPlugin, run_suites

    plugin = GradingPlugin(None, iter(()), lambda *args: None)  # type: ignore[arg-type]
    code = run_suites(plugin, "--collect-only")
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"the hidden suites could not be collected (pytest exit code {int(code)})")
    points: dict[str, float] = {}
    for info in plugin.infos:
        points[info.module] = points.get(info.module, 0.0) + info.max_points
    return points


def _functions(tree: ast.AST, prefix: str = "") -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[prefix + node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update(_functions(node, prefix + node.name + "."))
    return found


def _body_without_docstring(node: ast.FunctionDef) -> list[ast.stmt]:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def solution_cell_source(module: str) -> str:
    """The stub's code with every body replaced by the solution's, between nbgrader's markers.

    The module docstring goes to the notebook's text and the sibling imports go (the notebook is
    one namespace: earlier sections' classes are already defined)."""
    stub = (ROOT / "exercises" / f"{module}.py").read_text(encoding="utf-8")
    solution = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    stub_lines = stub.splitlines()
    solution_lines = solution.splitlines()
    stub_tree, solution_tree = ast.parse(stub), ast.parse(solution)
    solved = _functions(solution_tree)
    edits = []
    for name, node in _functions(stub_tree).items():
        if name not in solved:
            raise ValueError(f"solutions/{module}.py has no {name}")
        body = _body_without_docstring(node)
        answer = _body_without_docstring(solved[name])
        if not body or not answer:
            continue
        indent = " " * body[0].col_offset
        answer_text = textwrap.dedent("\n".join(solution_lines[answer[0].lineno - 1: answer[-1].end_lineno]))
        replacement = [f"{indent}### BEGIN SOLUTION", *textwrap.indent(answer_text, indent).splitlines(),
                       f"{indent}### END SOLUTION"]
        edits.append((body[0].lineno - 1, body[-1].end_lineno, replacement))
    for start, end, replacement in sorted(edits, reverse=True):
        stub_lines[start:end] = replacement
    doc = ast.get_docstring(stub_tree, clean=False)
    text = "\n".join(stub_lines) + "\n"
    if doc is not None and stub_tree.body:
        first = stub_tree.body[0]
        text = "\n".join(stub_lines[first.end_lineno:]) + "\n"
    text = SIBLING_IMPORT.sub("", text)
    return text.strip("\n") + "\n"


def module_docstring(module: str) -> str:
    return ast.get_docstring(ast.parse((ROOT / "exercises" / f"{module}.py").read_text(encoding="utf-8"))) or ""


def create_course(course_dir: Path, *, assignment: str = "ch3", course_id: str = "attention-kit-ch3",
                  lang: str = "en", points: dict[str, float] | None = None, run_student_kernel: bool = False) -> Path:
    """Write a ready nbgrader course; returns the source notebook's path.

    `run_student_kernel`: autograde also executes each notebook in a Jupyter kernel (unsandboxed),
    so that feedback shows the students' outputs; by default student code runs only in the sandbox."""
    import jinja2

    catalog = Catalog(lang)
    points = suite_points() if points is None else points
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    env.globals["t"] = catalog.t
    sections = []
    for module in BOOK_ORDER:
        section = MODULE_SECTIONS[module]
        sections.append({
            "module": module,
            "section": section,
            "title": catalog.t(section_key(section)),
            "doc": module_docstring(module),
            "code": f"# module: {module}\n" + solution_cell_source(module),
            "points": points.get(module, 0.0),
            "test_id": TEST_GRADE_ID.format(module=module),
        })
    course_dir = Path(course_dir)
    source = course_dir / "source" / assignment
    source.mkdir(parents=True, exist_ok=True)
    config = env.get_template("nbgrader/nbgrader_config.py.j2").render(
        course_id=course_id, assignment=assignment, lang=lang, run_student_kernel=run_student_kernel)
    (course_dir / "nbgrader_config.py").write_text(config, encoding="utf-8")
    text = env.get_template("nbgrader/chapter.ipynb.j2").render(sections=sections, lang=lang)
    notebook = json.loads(text)  # the template must produce valid JSON
    target = source / f"{NOTEBOOK_NAME}.ipynb"
    target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


# ------------------------------------------------------------------------------------------------
# Feedback in a test cell
# ------------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _cell_environment(lang: str) -> Any:
    """The jinja2 environment of the test cells' feedback, built once per language (not per cell)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                             autoescape=True)
    env.globals["t"] = Catalog(lang).t
    return env


def cell_feedback_html(document: dict[str, Any], module: str, catalog: Catalog) -> str:
    """The kit's feedback for one module, as an HTML fragment for a notebook cell."""
    env = _cell_environment(catalog.lang)
    tests = []
    for test in document.get("tests", []):
        if test["id"].split("::")[0] != module:
            continue
        title_key = f"tests.{test['id']}.title"
        tests.append({**test, "title": catalog.t(title_key) if catalog.has(title_key) else test["id"].split("::")[-1],
                      "misconception_text": catalog.t(f"misconceptions.{test['misconception']}.title")
                      if test.get("misconception") and catalog.has(f"misconceptions.{test['misconception']}.title")
                      else test.get("misconception")})
    section = next((s for s in document.get("sections", []) if s["id"] == MODULE_SECTIONS[module]),
                   {"score": 0.0, "max_score": 0.0, "title": catalog.t(section_key(MODULE_SECTIONS[module]))})
    integrity = [n for n in document.get("integrity", []) if n["kind"].startswith("submission.")]
    return env.get_template("nbgrader/cell_feedback.html.j2").render(
        module=module, section=section, tests=tests, integrity=integrity)


def section_result(document: dict[str, Any], module: str) -> tuple[float, float]:
    for section in document.get("sections", []):
        if section["id"] == MODULE_SECTIONS[module]:
            return float(section["score"]), float(section["max_score"])
    return 0.0, 0.0


def partial_credit(document: dict[str, Any], module: str, points: float) -> float:
    """The test cell's points: the section's share of its hidden-test points."""
    score, max_score = section_result(document, module)
    if max_score <= 0 or points <= 0:
        return 0.0
    return round(points * min(score, max_score) / max_score, 4)


_FOLDER_RESULTS: dict[str, dict[str, Any]] = {}


def _graded_folder(notebooks: list[Path], lang: str) -> dict[str, Any] | None:
    """results.json for these saved notebooks, graded once in a fresh `python -m grader` process
    (a notebook's test cells all reuse it while the files are unchanged)."""
    import hashlib

    digest = hashlib.sha256(lang.encode())
    contents = {}
    for notebook in notebooks:
        contents[notebook.name] = notebook.read_bytes()
        digest.update(notebook.name.encode() + b"\0" + contents[notebook.name])
    key = digest.hexdigest()
    if key in _FOLDER_RESULTS:
        return _FOLDER_RESULTS[key]
    with tempfile.TemporaryDirectory(prefix="kit-cells-") as scratch:
        submission = Path(scratch) / "submission"
        submission.mkdir()
        for name, data in contents.items():
            (submission / name).write_bytes(data)
        out = Path(scratch) / "out"
        subprocess.run([sys.executable, "-m", "grader", str(submission), "--out", str(out), "--quiet",
                        "--force", "--jobs", "1", "--lang", lang],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=600)
        try:
            document = json.loads((out / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    _FOLDER_RESULTS[key] = document
    return document


def grade_cells(module: str, points: float = 0.0, lang: str = "en") -> None:
    """The hidden part of a test cell (runs in the notebook's kernel)."""
    if module not in MODULES:
        raise ValueError(f"unknown module {module!r}")
    catalog = Catalog(lang)
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # The trusted GradeWithKit preprocessor replaces this cell's outputs. Reaching this
        # means it is not configured: fail closed.
        raise RuntimeError(catalog.t("classroom.nbgrader.not-configured"))
    notebooks = sorted(p for p in Path.cwd().glob("*.ipynb") if not p.name.startswith("."))
    document = _graded_folder(notebooks, lang)
    if document is None:
        raise RuntimeError(catalog.t("classroom.nbgrader.grader-failed"))
    from IPython.display import HTML, display

    display(HTML(cell_feedback_html(document, module, catalog)))
    score, max_score = section_result(document, module)
    if score < max_score:
        raise AssertionError(catalog.t("classroom.nbgrader.not-yet", score=f"{score:g}", max_score=f"{max_score:g}"))


# ------------------------------------------------------------------------------------------------
# The trusted side: an nbgrader preprocessor
# ------------------------------------------------------------------------------------------------

try:
    from nbgrader.preprocessors import NbGraderPreprocessor as _Base
    from traitlets import Int, Unicode
except ImportError:  # nbgrader is an optional extra; the rest of this module works without it
    _Base = object  # type: ignore[assignment,misc]
    Int = Unicode = None  # type: ignore[assignment]


def _write_notebook(nb: Any, directory: Path, name: str) -> None:
    import nbformat

    directory.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(directory / f"{name}.ipynb"))


def grade_notebooks(notebooks: dict[str, Path], name: str, lang: str = "en",
                    jobs: int = 1) -> dict[str, tuple[str, dict[str, Any]]]:
    """Grade several students' copies of one notebook in a single run of the kit's path.
    Each notebook is read by intake's rules (no link, no special file, size capped).

    Returns student -> (hash of the code graded, results.json)."""
    from grader.intake.discovery import notebook_submission
    from grader.runner import grade_submissions

    submissions = [notebook_submission(student, notebook) for student, notebook in notebooks.items()]
    with tempfile.TemporaryDirectory(prefix="kit-nbgrader-") as scratch:
        summary = grade_submissions(submissions, Path(scratch) / "out", jobs=jobs, lang=lang, force=True)
        return {student: (submission.content_hash, json.loads((summary.out_of[graded] / "results.json").read_text(
                    encoding="utf-8"))) for student, submission, graded in zip(notebooks, submissions, summary.names)}


def grade_notebook_document(nb: Any, name: str, lang: str = "en", jobs: int = 1) -> dict[str, Any]:
    """Grade the code of one in-memory notebook through the kit's path; returns results.json."""
    from grader.runner import grade

    with tempfile.TemporaryDirectory(prefix="kit-nbgrader-") as scratch:
        submission = Path(scratch) / "submission"
        _write_notebook(nb, submission, name)
        out = Path(scratch) / "out"
        grade(submission, out, jobs=jobs, lang=lang, force=True)
        return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _code_hash(nb: Any, name: str) -> str:
    import nbformat

    from grader.intake.discovery import submission_from_files

    return submission_from_files(name, Path(name), {f"{name}.ipynb": nbformat.writes(nb).encode()}).content_hash


if _Base is not object:
    class GradeWithKit(_Base):  # type: ignore[misc,valid-type]
        """Scores the test cells of an executed notebook with the kit, ignoring what the kernel said."""

        lang = Unicode("en", help="Language of the feedback shown in test cells (en or zh).").tag(config=True)
        jobs = Int(1, help="Sandbox workers used while grading one notebook.").tag(config=True)

        def preprocess(self, nb, resources):
            import nbformat

            tests = [(_module_of_test(cell), cell) for cell in nb.cells if _is_kit_test_cell(cell)]
            if not tests:
                return nb, resources
            info = resources.get("nbgrader", {})
            name = info.get("notebook") or NOTEBOOK_NAME
            catalog = Catalog(self.lang)
            try:
                document = self._document(nb, name, info.get("student"), info.get("assignment"))
            except Exception as exc:  # noqa: BLE001 - any failure must score 0, never crash the run
                self.log.error("attention-kit could not grade %s: %s", name, exc)
                document = None
            for module, cell in tests:
                points = float(cell.metadata["nbgrader"].get("points", 0) or 0)
                if document is None:
                    cell.outputs = [nbformat.v4.new_output(
                        "error", ename="GraderError", evalue=catalog.t("classroom.nbgrader.grader-failed"),
                        traceback=[])]
                    continue
                credit = partial_credit(document, module, points)
                html = cell_feedback_html(document, module, catalog)
                score, max_score = section_result(document, module)
                summary = catalog.t("classroom.nbgrader.cell-summary", score=f"{score:g}", max_score=f"{max_score:g}")
                cell.outputs = [
                    nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": summary}),
                    nbformat.v4.new_output("execute_result", data={"text/plain": repr(credit)},
                                           execution_count=cell.get("execution_count") or 1),
                ]
            return nb, resources

        # One `nbgrader autograde` run grades many students one notebook at a time; the kit grades
        # a whole class at once much faster (one sandbox pool, reference outputs computed once).
        # So the first notebook of a run grades every submitted copy of it that this run will
        # autograde, and later notebooks reuse that result when their code is unchanged.
        _batches: dict = {}

        def _document(self, nb, name: str, student: str | None, assignment: str | None) -> dict[str, Any]:
            key = (assignment, name)
            if student and assignment and key not in GradeWithKit._batches:
                GradeWithKit._batches[key] = self._grade_batch(name, assignment)
            cached = GradeWithKit._batches.get(key, {}).get(student)
            if cached is not None and cached[0] == _code_hash(nb, name):
                return cached[1]
            return grade_notebook_document(nb, name, self.lang, self.jobs)

        def _grade_batch(self, name: str, assignment: str) -> dict[str, tuple[str, dict[str, Any]]]:
            import fnmatch

            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            pattern = coursedir.student_id or "*"
            notebooks = {}
            root = Path(coursedir.root) / coursedir.submitted_directory
            for folder in sorted(root.iterdir()) if root.is_dir() else []:
                if not folder.is_dir() or folder.name.startswith(".") or not fnmatch.fnmatch(folder.name, pattern):
                    continue
                notebook = Path(coursedir.format_path(coursedir.submitted_directory, folder.name, assignment)) \
                    / f"{name}.ipynb"
                if notebook.is_file():
                    notebooks[folder.name] = notebook
            if not notebooks:
                return {}
            try:
                import time

                started = time.perf_counter()
                graded = grade_notebooks(notebooks, name, self.lang, self.jobs)
                self.log.info("attention-kit graded %d copies of %s in %.1f s", len(graded), name,
                              time.perf_counter() - started)
                return graded
            except Exception as exc:  # noqa: BLE001 - fall back to grading one notebook at a time
                self.log.warning("attention-kit: batch grading failed (%s); grading notebooks one by one", exc)
                return {}


def _is_kit_test_cell(cell: Any) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution") \
        and _module_of_test(cell) is not None


def _module_of_test(cell: Any) -> str | None:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    module = grade_id.removeprefix("test_")
    return module if module in MODULES else None
