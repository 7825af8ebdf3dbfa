"""The source of an nbgrader course for Chapter 3, graded by the kit.

`create_course(COURSE_DIR)` writes ``nbgrader_config.py`` and ``source/<assignment>/``: the
chapter's notebook ``ch3_attention.ipynb`` (both rendered from templates/nbgrader/) and the kit's
public checks (``ch3_checks.py`` and ``ch3_check_list.py`` with their messages and report
layout, the same as the student bundle's check.py runs). The notebook is one for the chapter, as
the book's own ch03.ipynb: per section a solution cell (the stub's code, each body between
``### BEGIN SOLUTION`` / ``### END SOLUTION``) and a test cell worth that section's points in the
hidden suites.

A test cell holds only visible code: ``check_section(module, globals())`` runs that section's
public checks on the notebook's own definitions, so running the cell, or ``nbgrader validate``,
fails with the reasons until the checks pass. Its score in ``nbgrader autograde`` never comes from
the kernel: the course's `GradeWithKit` preprocessor (grader/classroom/nbgrader_autograde.py) grades
the notebook's code with the kit and replaces the cell's output. With no hidden part, the
released test cells are the source's: nbgrader has nothing to restore and warns of no changed
checksum.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

from grader.classroom.nbgrader_autograde import BOOK_ORDER, NOTEBOOK_NAME, TEST_GRADE_ID
from grader.classroom.nbgrader_feedback_page import FOLDER as FEEDBACK_FOLDER
from grader.classroom.nbgrader_feedback_page import template_name, write_feedback_template
from grader.classroom.release import stubs_dir, write_public_checks
from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.intake.lines import source_lines
from grader.records import MODULE_SECTIONS
from grader.resources import folder
from grader.suites.hidden_suites import collect

SOLUTIONS_DIR = folder("solutions")
SIBLING_IMPORT = re.compile(r"^from (sec3_\w+|exercise3_\w+) import .*$\n?", re.MULTILINE)


def suite_points() -> dict[str, float]:
    """Module -> the points its hidden tests are worth (collected, not run)."""
    points: dict[str, float] = {}
    for info in collect().infos:
        points[info.module] = points.get(info.module, 0.0) + info.max_points
    return points


def _functions(tree: ast.AST, prefix: str = "") -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[prefix + node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update(_functions(node, prefix + node.name + "."))
    return found


def _body_without_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(node.body)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return body


def solution_cell_source(module: str, lang: str = "en") -> str:
    """The stub's code with every body replaced by the solution's, between nbgrader's markers.

    The module docstring goes to the notebook's text and the sibling imports go (the notebook is
    one namespace: earlier sections' classes are already defined)."""
    stub = (stubs_dir("pytorch", lang) / f"{module}.py").read_text(encoding="utf-8")
    solution = (SOLUTIONS_DIR / f"{module}.py").read_text(encoding="utf-8")
    stub_lines = source_lines(stub)  # numbered as ast numbers them
    solution_lines = source_lines(solution)
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
        answer_text = textwrap.dedent("\n".join(solution_lines[answer[0].lineno - 1 : answer[-1].end_lineno]))
        replacement = [
            f"{indent}### BEGIN SOLUTION",
            *source_lines(textwrap.indent(answer_text, indent)),
            f"{indent}### END SOLUTION",
        ]
        edits.append((body[0].lineno - 1, body[-1].end_lineno, replacement))
    for start, end, replacement in sorted(edits, reverse=True):
        stub_lines[start:end] = replacement
    doc = ast.get_docstring(stub_tree, clean=False)
    text = "\n".join(stub_lines) + "\n"
    if doc is not None and stub_tree.body:
        first = stub_tree.body[0]
        text = "\n".join(stub_lines[first.end_lineno :]) + "\n"
    text = SIBLING_IMPORT.sub("", text)
    return text.strip("\n") + "\n"


def module_docstring(module: str, lang: str = "en") -> str:
    """The stub's module docstring (in the course's language): the section's introduction."""
    source = (stubs_dir("pytorch", lang) / f"{module}.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def create_course(
    course_dir: Path,
    *,
    assignment: str = "ch3",
    course_id: str = "attention-kit-ch3",
    lang: str = "en",
    points: dict[str, float] | None = None,
    run_student_kernel: bool = False,
) -> Path:
    """Write a ready nbgrader course; returns the source notebook's path.

    `run_student_kernel`: autograde also executes each notebook in a Jupyter kernel (unsandboxed),
    so that feedback shows the students' outputs; by default student code runs only in the sandbox."""
    import jinja2

    catalog = Catalog(lang)
    points = suite_points() if points is None else points
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.globals["t"] = catalog.t
    sections = []
    for module in BOOK_ORDER:
        section = MODULE_SECTIONS[module]
        sections.append(
            {
                "module": module,
                "section": section,
                "title": catalog.t(section_key(section)),
                "doc": module_docstring(module, lang),
                "code": f"# module: {module}\n" + solution_cell_source(module, lang),
                "points": points.get(module, 0.0),
                "test_id": TEST_GRADE_ID.format(module=module),
            }
        )
    course_dir = Path(course_dir)
    source = course_dir / "source" / assignment
    source.mkdir(parents=True, exist_ok=True)
    write_public_checks(source, lang)  # released with the notebook: its test cells run them
    if lang != "en":
        write_feedback_template(course_dir, catalog)
    config = env.get_template("nbgrader/nbgrader_config.py.j2").render(
        course_id=course_id,
        assignment=assignment,
        lang=lang,
        run_student_kernel=run_student_kernel,
        feedback_template=template_name(lang),
        feedback_folder=FEEDBACK_FOLDER,
    )
    (course_dir / "nbgrader_config.py").write_text(config, encoding="utf-8")
    text = env.get_template("nbgrader/chapter.ipynb.j2").render(sections=sections, lang=lang)
    notebook = json.loads(text)  # the template must produce valid JSON
    target = source / f"{NOTEBOOK_NAME}.ipynb"
    target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
