"""Notebook submissions are graded exactly as the equivalent .py files."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from grader.i18n import LANGUAGES, Catalog
from grader.intake.discovery import find_submissions, read_submission
from grader.intake.notebooks import MAX_NOTEBOOK_BYTES, NotebookError, modules_from_notebook, python_code
from grader.run import grade
from tests.conftest import MODULES, solutions_as_submission

SIBLING = re.compile(r"^from (sec3_\w+|exercise3_\w+) import .*$\n?", re.M)


def code_cell(source: str, **metadata) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [], "source": source}


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def notebook(cells: list[dict]) -> dict:
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def split_cells(source: str) -> list[str]:
    """A module's source as notebook cells: the imports, then one cell per top-level definition."""
    lines = source.splitlines()
    tree = ast.parse(source)
    cells, imports = [], []
    for node in tree.body:
        start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno) - 1
        text = "\n".join(lines[start : node.end_lineno])
        (imports if isinstance(node, (ast.Import, ast.ImportFrom)) else cells).append(text)
    return ["\n".join(imports)] + cells


def write(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


def section_notebooks(folder: Path, solutions: Path) -> None:
    """One notebook per module, with the noise real notebooks carry."""
    folder.mkdir(parents=True)
    for module in MODULES:
        cells = [markdown(f"# {module}\nSome notes.")]
        for i, text in enumerate(split_cells((solutions / f"{module}.py").read_text())):
            cells.append(code_cell(("%matplotlib inline\n" if i == 0 else "") + text))
        cells += [
            code_cell("!pip list | head -3\ntorch.tril?\nfor i in range(2):\n    %time i\n"),
            code_cell("%%bash\necho this is not python\n"),
            code_cell("%%time\nx = 1 + 1\n"),
            code_cell(
                "raise AssertionError('an nbgrader test cell: never part of the module')",
                nbgrader={"grade": True, "solution": False, "grade_id": f"t_{module}", "points": 1},
            ),
        ]
        write(folder / f"{module}.ipynb", notebook(cells))


def chapter_notebook(folder: Path, solutions: Path) -> None:
    """One notebook for the chapter, without the sibling imports a notebook does not need; each
    cell marked in one of the three accepted ways."""
    folder.mkdir(parents=True)
    cells = [markdown("# Chapter 3"), code_cell("import torch\nimport torch.nn as nn\nprint('ready')")]
    order = [
        "sec3_3_simple_attention",
        "sec3_4_self_attention",
        "exercise3_1_weight_transfer",
        "sec3_5_causal_attention",
        "sec3_6_multi_head_attention",
        "exercise3_2_two_dim_output",
        "exercise3_3_gpt2_attention",
    ]
    for index, module in enumerate(order):
        code = SIBLING.sub("", (solutions / f"{module}.py").read_text())
        code = re.sub(r"^import torch(\.nn as nn)?\n", "", code, flags=re.M)
        if index % 3 == 0:
            cells.append(code_cell(f"# module: {module}\n{code}"))
        elif index % 3 == 1:
            cells.append(code_cell(code, tags=[f"module:{module}"]))
        else:
            cells.append(code_cell(code, attention_kit={"module": module}))
        cells.append(code_cell("demo = 1 / 0  # scratch work in an unmarked cell is not graded"))
    write(folder / "chapter3.ipynb", notebook(cells))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("notebooks")
    klass = base / "class"
    solutions = solutions_as_submission(klass / "py")
    section_notebooks(klass / "sections", solutions)
    chapter_notebook(klass / "chapter", solutions)
    section_notebooks(klass / "broken", solutions)
    (klass / "broken" / "sec3_3_simple_attention.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}


def outcomes(result) -> dict[str, tuple[str, float]]:
    return {t.id: (t.status, t.points) for t in result.tests}


def test_notebooks_score_exactly_what_the_py_files_score(graded):
    py = graded["py"]
    assert py.max_score > 0 and py.score == py.max_score
    for name in ("sections", "chapter"):
        assert outcomes(graded[name]) == outcomes(py), name
        assert graded[name].score == py.score
        notes = [n for n in graded[name].integrity if not n.kind.startswith("sandbox")]
        # each section notebook's one nbgrader test cell is left out, and said so (the chapter has none)
        assert all(
            n.kind == "submission.notebook-test-cells" and re.fullmatch(r".*\.ipynb \(\d+\)", n.detail) for n in notes
        )
        assert sorted(n.detail.split(" (")[0] for n in notes) == (
            sorted(f"{m}.ipynb" for m in MODULES) if name == "sections" else []
        )


def test_a_broken_notebook_costs_only_its_own_tests(graded):
    broken, py = graded["broken"], graded["py"]
    for test_id, (status, points) in outcomes(broken).items():
        if test_id.startswith("sec3_3_simple_attention::"):
            assert status == "error" and points == 0
        else:
            assert (status, points) == outcomes(py)[test_id]
    notes = [n for n in broken.integrity if n.kind == "submission.notebook-not-json"]
    assert len(notes) == 1
    assert re.fullmatch(r"sec3_3_simple_attention\.ipynb \(\d+:\d+\)", notes[0].detail)  # where it breaks


# -- reading notebooks, without grading --------------------------------------------------------------


def test_magics_become_pass_and_non_python_cells_go(tmp_path):
    assert python_code("%%bash\nls\n") is None
    assert python_code("%%html\n<b>x</b>") is None
    code = python_code("%%time\nfor i in range(3):\n    %timeit i\n    !ls\nx = 1\ntorch.tril?\n")
    assert code is not None
    compile(code, "cell", "exec")
    assert "x = 1" in code and "pass  # %timeit i" in code


@pytest.mark.parametrize(
    "cell",
    [
        "x = (7\n     % 2)\ny = (3\n     != 4)\n",  # PEP 8's break before a binary operator
        "x = 7 \\\n    % 2\n",  # a backslash continuation
        's = """\n%not a magic\n!not a shell\nWhy?\n"""\n',  # lines of a string
        "x = f'''{\n%no\n}'''\n",  # a line inside an f-string's braces
        "x = 1\n%= 2\n!= 3\n",  # operators, not escapes (Python then says what is wrong)
        "d = {\n    'a': 1,\n    # %comment\n    !x\n}\n",  # inside brackets, even after a comment line
    ],
)
def test_a_line_that_continues_python_is_python_whatever_it_starts_with(cell):
    assert python_code(cell) == cell


def test_a_magic_is_one_at_the_start_of_a_logical_line_after_anything(tmp_path):
    cell = (
        "x = (1,\n     2)\n%time y = x\n"  # after a bracketed expression ends
        "s = '''\n%inside\n'''\n!ls  # after a string ends\n"
        "if x:\n    %timeit x\n    !echo (unbalanced 'quote\n    z = (1\n         % 2)\n"
        "!echo a \\\n  b\n"  # a shell line continued with a backslash is the magic's
        "?torch.tril\ntorch.tril??\n"
    )
    code = python_code(cell)
    assert code is not None
    compile(code, "cell", "exec")
    changed = [n for n, (old, new) in enumerate(zip(cell.split("\n"), code.split("\n")), 1) if old != new]
    assert changed == [3, 7, 9, 10, 13, 14, 15, 16]
    assert code.split("\n")[9] == "    pass  # !echo (unbalanced 'quote"  # the student's line, after the comment


_LOGICAL_LINES = [
    "x = 1",
    "y = x % 2",
    "print(x != 2)",
    "# %a comment",
    "",
    "%time x = 1",
    "%%time",  # a cell magic is a line magic past the first line
    "!ls -la",
    "!echo 'unterminated",
    "!echo (",
    "?torch",
    "torch.tril?",
    "torch.tril??",
    "x %= 3",
]
_CONTINUATION_LINES = ["% 2", "!= 3", "%time", "!ls", "?x", "# !comment", "", "'%s' % x", "x?"]
_STRING_LINES = ["%inside", "!inside", "Why?", "", "  ?x", "# %"]


@st.composite
def _cells(draw) -> str:
    """Cells of Python and IPython lines: logical lines, bracket and backslash continuations,
    multi-line strings, indented blocks (no leading blank or indented first line, no cell magic on
    the first line, no prompts: IPython's clean-up steps, which the kit leaves to Python)."""
    lines = [draw(st.sampled_from(["x = 1", "import torch", "%time x", "!ls", "torch.tril?"]))]
    for _ in range(draw(st.integers(1, 12))):
        indent = draw(st.sampled_from(["", "", "    "]))
        if indent and not lines[-1].rstrip().endswith(":"):
            lines.append("if x:")
        kind = draw(st.sampled_from(["line", "line", "brackets", "backslash", "string"]))
        if kind == "line":
            lines.append(indent + draw(st.sampled_from(_LOGICAL_LINES)))
        elif kind == "brackets":
            opening = draw(st.sampled_from(["(", "[", "{"]))
            closing = {"(": ")", "[": "]", "{": "}"}[opening]
            lines.append(f"{indent}z = {opening}1")
            lines += [
                indent + "     " + draw(st.sampled_from(_CONTINUATION_LINES)) for _ in range(draw(st.integers(1, 3)))
            ]
            lines.append(indent + "     " + closing)
        elif kind == "backslash":
            lines.append(f"{indent}w = 1 \\")
            lines.append(indent + "    " + draw(st.sampled_from(["% 2", "!= 3", "+ 2"])))
        else:
            quote = draw(st.sampled_from(['"""', "'''", "f'''"]))
            lines.append(f"{indent}s = {quote}")
            lines += [draw(st.sampled_from(_STRING_LINES)) for _ in range(draw(st.integers(0, 3)))]
            lines.append(quote[-3:])
    return "\n".join(lines) + "\n"


@settings(max_examples=400, deadline=None)
@given(_cells())
def test_the_lines_taken_for_ipythons_are_the_lines_ipython_transforms(cell):
    """Property: on any cell of the kinds above, the kit rewrites exactly the lines IPython's own
    input transformer rewrites. (Compared where IPython keeps the line count: it merges a help
    request with the lines of an unclosed bracket before it, ``!echo (`` then ``x?``, into one
    help call; the kit keeps both lines apart. Blank lines are IPython's to tidy.)"""
    transformers = pytest.importorskip("IPython.core.inputtransformer2")
    try:
        by_ipython = transformers.TransformerManager().transform_cell(cell).split("\n")
    except (SyntaxError, RuntimeError):  # a cell IPython itself cannot run
        return
    by_kit = python_code(cell)
    assert by_kit is not None
    lines, kit_lines = cell.split("\n"), by_kit.split("\n")
    assert len(kit_lines) == len(lines)
    assume(len(by_ipython) == len(lines))
    ipython_changed = [n for n, (a, b) in enumerate(zip(lines, by_ipython)) if a != b and a.strip()]
    kit_changed = [n for n, (a, b) in enumerate(zip(lines, kit_lines)) if a != b]
    assert kit_changed == ipython_changed, (cell, by_ipython)
    assert all(kit_lines[n].lstrip().startswith("pass  # ") for n in kit_changed)


def test_nbgrader_test_cells_and_skipped_cells_are_not_code(tmp_path):
    path = tmp_path / "sec3_5_causal_attention.ipynb"
    write(
        path,
        notebook(
            [
                code_cell("A = 1"),
                code_cell("B = 2", nbgrader={"grade": True, "solution": True, "grade_id": "s"}),
                code_cell("assert False", nbgrader={"grade": True, "solution": False, "grade_id": "t"}),
                code_cell("import nb_helper", tags=["kit:skip"]),
                code_cell("C = 3", attention_kit={"skip": True}),
            ]
        ),
    )
    source = modules_from_notebook(path)["sec3_5_causal_attention"]
    namespace: dict = {}
    exec(compile(source, "m", "exec"), namespace)
    assert namespace["A"] == 1 and namespace["B"] == 2 and "C" not in namespace


def test_chapter_notebook_modules_see_earlier_ones(tmp_path):
    path = tmp_path / "my chapter.ipynb"
    write(
        path,
        notebook(
            [
                code_cell("import math\nvalue = 3"),
                code_cell("# module: sec3_3_simple_attention\ndef f():\n    return math.pi"),
                code_cell("def g():\n    return f()", tags=["module:sec3_4_self_attention"]),
                code_cell("# module: not_a_module\nh = 1"),
            ]
        ),
    )
    sources = modules_from_notebook(path)
    assert set(sources) == {"sec3_3_simple_attention", "sec3_4_self_attention"}
    assert sources["sec3_3_simple_attention"].startswith("import math")
    assert "value = 3" not in sources["sec3_3_simple_attention"]
    assert "from sec3_3_simple_attention import *" in sources["sec3_4_self_attention"]


@pytest.mark.parametrize(
    "content, reason",
    [
        ("not json at all", "not-json"),
        ('["a list"]', "no-cells"),
        ('{"metadata": {}}', "no-cells"),
        ("", "not-json"),
        ("x" * (MAX_NOTEBOOK_BYTES + 1), "too-large"),
    ],
)
def test_unreadable_notebooks_say_why_in_the_students_language(tmp_path, content, reason):
    path = tmp_path / "sec3_3_simple_attention.ipynb"
    path.write_text(content)
    with pytest.raises(NotebookError) as caught:
        modules_from_notebook(path)
    assert caught.value.reason == reason
    note = read_submission(tmp_path).problems[0]
    assert note.kind == f"submission.notebook-{reason}"
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        assert catalog.has(f"integrity.{note.kind}"), (lang, note.kind)
        text = catalog.t(f"integrity.{note.kind}", detail=note.detail)
        assert "sec3_3_simple_attention.ipynb" in text
        if reason == "too-large":
            assert f"{MAX_NOTEBOOK_BYTES // 2**20} MB" in text


def test_a_notebook_that_cannot_be_opened_says_so(tmp_path, monkeypatch):
    path = tmp_path / "sec3_3_simple_attention.ipynb"
    path.write_text("{}")
    real_open = os.open

    def deny(name, flags, *args, **kwargs):
        if str(name).endswith(".ipynb"):
            raise PermissionError(13, "denied")
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(NotebookError) as caught:
        modules_from_notebook(path)
    assert caught.value.reason == "unreadable"
    assert all(Catalog(lang).has("integrity.submission.notebook-unreadable") for lang in LANGUAGES)


def test_nbformat3_notebooks_are_read(tmp_path):
    path = tmp_path / "sec3_3_simple_attention.ipynb"
    path.write_text(
        json.dumps(
            {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": "X = 42", "metadata": {}}]}]}
        )
    )
    assert "X = 42" in modules_from_notebook(path)["sec3_3_simple_attention"]


def test_discovery_of_notebook_submissions(tmp_path):
    single = tmp_path / "single"
    single.mkdir()
    write(single / "whatever.ipynb", notebook([code_cell("# module: sec3_3_simple_attention\nX = 1")]))
    assert find_submissions(single) == ([single], False)
    klass = tmp_path / "class"
    (klass / "ann").mkdir(parents=True)
    write(klass / "ann" / "sec3_3_simple_attention.ipynb", notebook([code_cell("X = 1")]))
    write(klass / "instructions.ipynb", notebook([markdown("read me")]))
    assert find_submissions(klass) == ([klass / "ann"], True)
    both = klass / "ann"
    (both / "sec3_3_simple_attention.py").write_text("Y = 2\n")
    assert read_submission(both).sources["sec3_3_simple_attention"] == "Y = 2\n"  # .py wins


def test_a_test_cell_in_a_notebook_named_like_a_module_is_left_out_with_a_note(tmp_path):
    """A notebook named like a module holds no test cell of the course's: a cell marked as one (a
    copy from somewhere, or the student's own cell marked by mistake) is left out, and a note says
    which, in the student's language, with what to do."""
    write(
        tmp_path / "sec3_5_causal_attention.ipynb",
        notebook(
            [
                code_cell("A = 1"),
                code_cell("B = 2", nbgrader={"grade": True, "solution": False, "grade_id": "mine", "points": 5}),
                markdown("notes"),
                code_cell("C = 3", nbgrader={"grade": "yes", "grade_id": "t"}),
                code_cell("D = 4", nbgrader={"grade": True, "solution": True, "grade_id": "answer"}),
                code_cell("E = 5", nbgrader="not a dict"),
            ]
        ),
    )
    submission = read_submission(tmp_path)
    source = submission.sources["sec3_5_causal_attention"]
    assert "A = 1" in source and "D = 4" in source and "E = 5" in source
    assert "B = 2" not in source and "C = 3" not in source
    # code cells are numbered as Jupyter's users count them: the markdown cell is not one
    assert [(n.kind, n.detail) for n in submission.problems] == [
        ("submission.notebook-test-cells", "sec3_5_causal_attention.ipynb (2, 3)")
    ]
    for lang in LANGUAGES:
        text = Catalog(lang).t("integrity.submission.notebook-test-cells", detail=submission.problems[0].detail)
        assert "sec3_5_causal_attention.ipynb (2, 3)" in text and "nbgrader" in text


def test_a_note_lists_at_most_ten_test_cells(tmp_path):
    write(
        tmp_path / "sec3_3_simple_attention.ipynb",
        notebook([code_cell(f"X{i} = {i}", nbgrader={"grade": True, "grade_id": f"t{i}"}) for i in range(50)]),
    )
    [note] = read_submission(tmp_path).problems
    assert note.detail == "sec3_3_simple_attention.ipynb (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …)"


def test_a_chapter_notebooks_test_cells_need_no_note(tmp_path):
    write(
        tmp_path / "chapter.ipynb",
        notebook(
            [
                code_cell("# module: sec3_3_simple_attention\nX = 1"),
                code_cell(
                    "from ch3_checks import check_section\ncheck_section('sec3_3_simple_attention', globals())",
                    nbgrader={
                        "grade": True,
                        "solution": False,
                        "grade_id": "test_sec3_3_simple_attention",
                        "points": 9,
                    },
                ),
            ]
        ),
    )
    submission = read_submission(tmp_path)
    assert submission.problems == () and "X = 1" in submission.sources["sec3_3_simple_attention"]


@pytest.mark.parametrize(
    "scratch",
    [
        "from ch3_checks import check_section\ncheck_section('sec3_3_simple_attention', globals())",
        "import ch3_checks\nch3_checks.check_section('sec3_3_simple_attention', globals())",
        "import ch3_check_list as checks, ch3_check_tools\nprint(checks)",
    ],
)
def test_a_cell_that_runs_the_public_checks_costs_the_student_nothing(tmp_path, scratch):
    """A cell that runs the course's public checks (a copy of a test cell without its nbgrader
    metadata, or the student's own scratch cell) imports them; they are not the student's code and
    not where the code is graded: the import is no part of the modules (it failed every module)."""
    write(
        tmp_path / "chapter.ipynb",
        notebook(
            [
                code_cell("import torch"),
                code_cell("# module: sec3_3_simple_attention\nX = torch.ones(1)"),
                code_cell(scratch),
            ]
        ),
    )
    source = read_submission(tmp_path).sources["sec3_3_simple_attention"]
    assert "ch3_check" not in source and "import torch" in source
    namespace: dict = {}
    exec(compile(source, "sec3_3_simple_attention", "exec"), namespace)
    assert namespace["X"].tolist() == [1.0]
