"""A chapter notebook without `# module:` lines: each module recognised by the names the contract
requires, the last definition winning, with what it needs and nothing else (issue 24, point 1 and
4). These tests read notebooks only; tests/test_student_notebooks.py grades them."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.i18n import LANGUAGES, Catalog
from grader.intake.contract import PARAMETERS, REQUIRED
from grader.intake.discovery import read_submission
from grader.intake.notebook_cells import origin_at
from grader.intake.notebooks import notebook_code
from grader.intake.statements import cell_statements
from tests.conftest import ROOT, solutions_as_submission
from tests.student_notebooks import FAILING_SCRATCH, MODULES, SCRATCH, code, markdown, module_sources, notebook, pieces

M33, M34, M35, M36 = MODULES[:4]


def read(tmp_path: Path, cells: list[dict], name: str = "ch3.ipynb"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(json.dumps(notebook(cells)), encoding="utf-8")
    return read_submission(tmp_path)


def lines_from(submission, module: str) -> list[tuple[int, int, str]]:
    """(cell, line in the cell, text) of every line of MODULE that came from the notebook."""
    source = submission.sources[module].split("\n")
    runs = submission.origins[module]
    out = []
    for number, text in enumerate(source, start=1):
        origin = origin_at(runs, number)
        if origin is not None:
            out.append((origin.cell, origin.line, text))
    return out


# -- the contract's names are the stubs' ------------------------------------------------------------


@pytest.mark.parametrize(
    "stubs", [ROOT / "grader" / "exercises", ROOT / "grader" / "exercises" / "mindspore"], ids=["pytorch", "mindspore"]
)
def test_the_required_names_are_the_stubs_names(stubs):
    for module, names in REQUIRED.items():
        tree = ast.parse((stubs / f"{module}.py").read_text(encoding="utf-8"))
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert tuple(defined) == names, module
        for node in tree.body:
            if getattr(node, "name", None) not in PARAMETERS:
                continue
            function = (
                node
                if isinstance(node, ast.FunctionDef)
                else next(f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
            )
            parameters = [a.arg for a in function.args.args if a.arg != "self"]
            assert tuple(parameters) == PARAMETERS[node.name], node.name


# -- statements: what each binds and reads ------------------------------------------------------------


def test_a_statement_knows_what_it_binds_and_reads_now_and_later():
    [imports, klass, patch, scratch] = cell_statements(
        "import torch.nn as nn\n"
        "class CausalAttention(CausalAttention, nn.Module):\n"
        "    scale = 2\n"
        "    twice = scale * 2\n"
        "    def forward(self, x):\n"
        "        scores = helper(x) * self.scale\n"
        "        return torch.softmax(scores, dim=-1) + OFFSET\n"
        "CausalAttention.forward = fixed_forward\n"
        "for i in range(3): print(i, undefined)\n"
    )
    assert imports.imports and imports.binds == {"nn"} and imports.modules == {"torch"}
    assert klass.defines == {"CausalAttention"}
    assert klass.now == {"CausalAttention", "nn"}  # the base is the class bound before
    assert klass.later == {"helper", "torch", "OFFSET"}  # a method's locals and the class's names are not
    assert patch.mutates == {"CausalAttention"} and patch.now == {"CausalAttention", "fixed_forward"}
    assert scratch.binds == {"i"} and "undefined" in scratch.now


# -- recognition ------------------------------------------------------------------------------------------


def test_a_notebook_without_markers_gives_each_module_its_definitions_and_nothing_else(tmp_path):
    submission = read(
        tmp_path,
        [
            markdown("# 第三章：注意力机制"),
            code("import torch\nimport torch.nn as nn\nimport matplotlib_that_is_missing"),
            code("inputs = torch.rand(6, 3)\nprint(inputs)"),
            code("def softmax_naive(x):\n    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)"),
            code("print(softmax_naive(inputs))\nraise RuntimeError('a demo that fails')"),
            markdown("## 3.5 因果注意力"),
            code("DIAGONAL = 1\ntorch.manual_seed(123)"),
            code("def causal_mask(n):\n    return torch.triu(torch.ones(n, n), diagonal=DIAGONAL)"),
            code("class CausalAttention(nn.Module):\n    def forward(self, x):\n        raise NotImplementedError"),
            code("ca = CausalAttention()\nprint(ca)"),
            code(
                "class CausalAttention(nn.Module):  # fixed\n"
                "    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n"
                "        super().__init__()\n"
                "        self.register_buffer('mask', causal_mask(context_length))\n"
                "    def forward(self, x):\n"
                "        return x"
            ),
            code(
                "from sec3_5_causal_attention import CausalAttention\n\n"
                "class MultiHeadAttentionWrapper(nn.Module):\n"
                "    def __init__(self, *args):\n"
                "        super().__init__()\n"
                "        self.heads = [CausalAttention(*args)]"
            ),
        ],
    )
    assert set(submission.sources) == {M33, M35, M36}
    assert submission.problems == ()
    m33 = lines_from(submission, M33)
    assert {cell for cell, _, _ in m33} == {1, 3}  # the imports' cell and the definition's: code cells, not markdown
    assert not any("print" in text or "matplotlib" in text or "inputs" in text for _, _, text in m33)
    m35 = {text for _, _, text in lines_from(submission, M35)}
    assert "DIAGONAL = 1" in m35 and "def causal_mask(n):" in m35  # the helper and its constant
    assert "        raise NotImplementedError" not in m35  # the draft: the later definition wins
    assert not any("manual_seed" in t or "ca = " in t for t in m35)
    m36 = submission.sources[M36]
    assert "from sec3_5_causal_attention import CausalAttention" in m36 and "class CausalAttention" not in m36
    found = {f.module: f for f in submission.intake.modules}
    # the cells that define its names and what they need (not the imports cell every module shares)
    assert found[M35].how == "recognised" and found[M35].cells == (5, 6, 9)
    assert found[M35].names == ("CausalAttention",) and found[M33].names == ("softmax_naive",)


def test_markers_still_decide_and_recognition_takes_the_rest(tmp_path):
    submission = read(
        tmp_path,
        [
            code("import torch"),
            code("# module: sec3_3_simple_attention\ndef softmax_naive(x):\n    return x"),
            code("def softmax_naive(x):\n    return 'a draft in a scratch cell'"),
            code("def simple_causal_mask(n):\n    return torch.tril(torch.ones(n, n))"),
        ],
    )
    found = {f.module: f.how for f in submission.intake.modules}
    assert found == {M33: "marked", M35: "recognised"}
    assert "a draft" not in submission.sources[M33]


def test_a_class_extending_its_earlier_version_and_a_later_patch_run_as_in_the_notebook(tmp_path):
    submission = read(
        tmp_path,
        [
            code("import torch.nn as nn"),
            code("class CausalAttention(nn.Module):\n    def forward(self, x):\n        return x"),
            code("class CausalAttention(CausalAttention):\n    pass"),
            code("def forward(self, x):\n    return 2 * x\n\nCausalAttention.forward = forward"),
            code("CausalAttention.forward = print  # in a demo cell? no: it changes the class, so it counts"),
        ],
    )
    namespace: dict = {}
    exec(compile(submission.sources[M35], M35, "exec"), namespace)
    assert namespace["CausalAttention"].forward is print
    assert namespace["CausalAttention"].__mro__[1].__name__ == "CausalAttention"


def test_a_cell_a_definition_needs_that_fails_is_reported_at_its_cell_and_line(tmp_path):
    submission = read(
        tmp_path,
        [
            code("import torch"),
            code("print(undefined)  # scratch: costs nothing"),
            code("SCALE = 1\nOFFSET = 1 / 0  # the module needs OFFSET"),
            code("def softmax_naive(x):\n    return torch.softmax(x, -1) * SCALE + OFFSET"),
        ],
    )
    with pytest.raises(ZeroDivisionError) as caught:
        exec(compile(submission.sources[M33], f"{M33}.py", "exec"), {})
    line = caught.traceback[-1].lineno + 1
    origin = origin_at(submission.origins[M33], line)
    assert (origin.cell, origin.line) == (3, 2)


def test_a_cell_that_does_not_parse_is_the_modules_where_it_holds_the_last_definition(tmp_path):
    submission = read(
        tmp_path,
        [
            code("import torch"),
            code("def softmax_naive(x):\n    return x"),
            code("def softmax_naive(x)\n    return torch.exp(x)"),  # the last definition, broken
            code("def simple_causal_mask(n)  # broken, but a later one is fine\n    pass"),
            code("def simple_causal_mask(n):\n    return torch.tril(torch.ones(n, n))"),
        ],
    )
    with pytest.raises(SyntaxError) as caught:
        compile(submission.sources[M33], f"{M33}.py", "exec")
    origin = origin_at(submission.origins[M33], caught.value.lineno)
    assert (origin.cell, origin.line) == (3, 1)
    compile(submission.sources[M35], f"{M35}.py", "exec")  # the broken draft is no part of 3.5


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_notebook_that_yields_nothing_says_what_it_defines_and_what_the_grader_looks_for(tmp_path, lang):
    submission = read(
        tmp_path,
        [code("def my_softmax(x):\n    return x\n\nclass SelfAttention:\n    pass"), code("print(1)")],
        name="作业.ipynb",
    )
    assert submission.sources == {}
    [note] = submission.problems
    assert (note.kind, note.detail) == ("submission.notebook-nothing-found", "作业.ipynb (my_softmax, SelfAttention)")
    text = Catalog(lang).t(f"integrity.{note.kind}", detail=note.detail)
    assert "作业.ipynb (my_softmax, SelfAttention)" in text
    assert all(name in text for names in REQUIRED.values() for name in names)
    empty = read(tmp_path / "empty", [code("print(1)"), markdown("只有说明")], name="notes.ipynb")
    assert [(n.kind, n.detail) for n in empty.problems] == [("submission.notebook-defines-nothing", "notes.ipynb")]
    assert Catalog(lang).has("integrity.submission.notebook-defines-nothing")


def test_a_module_given_by_a_py_file_is_not_taken_from_a_notebook(tmp_path):
    (tmp_path / f"{M35}.py").write_text("import torch\ndef simple_causal_mask(n):\n    return 'the .py file'\n")
    submission = read(
        tmp_path,
        [
            code("import torch"),
            code("def simple_causal_mask(n):\n    return 1"),
            code("class MultiHeadAttention:\n    def __init__(self):\n        self.m = simple_causal_mask(3)"),
        ],
    )
    assert "the .py file" in submission.sources[M35]
    found = {f.module: (f.how, f.file) for f in submission.intake.modules}
    assert found[M35] == ("file", f"{M35}.py") and found[M36][0] == "recognised"
    assert "def simple_causal_mask" in submission.sources[M36]  # the notebook's own, copied: as in its kernel


# -- a property: scratch cells anywhere change nothing ------------------------------------------------------


REFERENCE = {
    m: (ROOT / "solutions" / f"{m}.py").read_text(encoding="utf-8").replace("from .", "from ") for m in MODULES
}
DEFINITIONS = [p for p in pieces(REFERENCE) if not p.imports]


def _code_lines(submission, module: str) -> list[str]:
    return [line for _, _, line in lines_from(submission, module)]


@st.composite
def interleavings(draw):
    """The reference's definitions in book order, scratch cells (some failing) anywhere between them."""
    cells = [code("import torch\nimport torch.nn as nn")]
    for piece in DEFINITIONS:
        for _ in range(draw(st.integers(0, 2))):
            cells.append(code(draw(st.sampled_from(SCRATCH + FAILING_SCRATCH))))
        if draw(st.booleans()):
            cells.append(markdown(draw(st.sampled_from(["## 练习", "说明", "# Notes"]))))
        cells.append(code(piece.text))
    return cells


@pytest.fixture(scope="module")
def without_scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    return read(folder, [code("import torch\nimport torch.nn as nn"), *(code(p.text) for p in DEFINITIONS)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=interleavings())
def test_scratch_cells_anywhere_never_change_a_module(tmp_path_factory, without_scratch, cells):
    """Whatever scratch cells sit between the definitions (prints, seeds, demos that fail, a demo that
    binds a required name to a value), every module is made of the same code lines, and nothing of
    a scratch cell."""
    submission = read(tmp_path_factory.mktemp("mixed"), cells)
    assert set(submission.sources) == set(MODULES) and submission.problems == ()
    for module in MODULES:
        assert _code_lines(submission, module) == _code_lines(without_scratch, module), module


def test_the_recognised_reference_computes_what_the_reference_computes(tmp_path, without_scratch):
    """The modules recognised in the reference's notebook, imported as a student's would be, give
    the reference's values (the graded comparison is tests/test_student_notebooks.py)."""
    import torch

    folder = tmp_path / "recognised"
    folder.mkdir()
    for module, source in without_scratch.sources.items():
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
    reference = solutions_as_submission(tmp_path / "reference")
    results = []
    for where in (folder, reference):
        for module in MODULES:
            sys.modules.pop(module, None)
        sys.path.insert(0, str(where))
        try:
            torch.manual_seed(123)
            mha = importlib.import_module(M36).MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
            results.append(mha(torch.rand(2, 6, 3)))
        finally:
            sys.path.remove(str(where))
            for module in MODULES:
                sys.modules.pop(module, None)
    assert torch.equal(results[0], results[1])


def test_module_sources_of_a_notebook_are_stable(tmp_path):
    """Reading a notebook twice gives the same modules (a run reads each submission twice)."""
    raw = json.dumps(notebook([code("import torch"), *(code(p.text) for p in DEFINITIONS)])).encode()
    first = notebook_code(raw, "ch3.ipynb")
    second = notebook_code(raw, "ch3.ipynb")
    assert {m: g.source for m, g in first.modules.items()} == {m: g.source for m, g in second.modules.items()}


def test_student_sources_make_the_same_pieces_as_the_reference(tmp_path):
    """(The generator of student notebooks keeps every top-level statement of a module.)"""
    sources = module_sources(solutions_as_submission(tmp_path / "s"))
    assert [p.text for p in pieces(sources) if not p.imports] == [p.text for p in DEFINITIONS]


# -- the random state, as Run All leaves it (issue 38, point 3) --------------------------------------------

SEEDED_CELLS = [
    "import torch\nimport torch.nn as nn",
    "inputs = torch.rand(6, 3)  # drawn before the seed: Run All's value of W does not depend on it",
    "torch.manual_seed(123)",
    "def width():\n    return 2",
    "layer = nn.Linear(3, width())  # a demo that draws: its weights come before W",
    "print(torch.rand(2) + undefined_name)  # a demo that draws, then fails",
    "W = torch.rand(3, 2)",
    "class SelfAttention_v1(nn.Module):\n"
    "    def __init__(self, d_in, d_out):\n"
    "        super().__init__()\n"
    "        self.W_query = nn.Parameter(W.clone())\n"
    "    def forward(self, x):\n"
    "        return x @ self.W_query",
]


def run_all(cells: list[str]) -> dict:
    """The notebook's globals after running each cell in order (a cell that raises stops only itself)."""
    namespace: dict = {}
    for source in cells:
        try:
            exec(compile(source, "<cell>", "exec"), namespace)
        except Exception:  # noqa: BLE001 - a demo that fails, as a student would run past it
            pass
    return namespace


def test_a_value_drawn_from_the_random_state_is_the_one_run_all_draws(tmp_path):
    """A class reads a notebook global drawn after `torch.manual_seed(123)`: the module is rebuilt
    with the seed and the demos that draw between (guarded: the failing one costs nothing), so the
    global has the value Run All gives it; the seed's cell is not listed as defining the module."""
    import torch

    submission = read(tmp_path, [code(c) for c in SEEDED_CELLS])
    source = submission.sources[M34]
    namespace: dict = {}
    exec(compile(source, f"{M34}.py", "exec"), namespace)  # the module imports: the failing demo is guarded
    assert torch.equal(namespace["W"], run_all(SEEDED_CELLS)["W"])
    texts = {text.strip() for _, _, text in lines_from(submission, M34)}
    assert "torch.manual_seed(123)" in texts and "inputs = torch.rand(6, 3)" not in " ".join(texts)
    found = {f.module: f for f in submission.intake.modules}
    assert found[M34].cells == (7, 8)


def test_seeding_brings_no_loop_nor_another_modules_code(tmp_path):
    """A demo between the seed and the drawn value that loops (it may run long) or needs a class of
    another module is not copied in; a module whose needs draw nothing gets no seed."""
    cells = [
        "import torch\nimport torch.nn as nn",
        "torch.manual_seed(123)",
        "for _ in range(3):\n    torch.rand(1)",
        "def softmax_naive(x):\n    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)",
        "probe = softmax_naive(torch.rand(2))",
        "W = torch.rand(3, 2)",
        SEEDED_CELLS[-1],
    ]
    submission = read(tmp_path, [code(c) for c in cells])
    m34 = submission.sources[M34]
    assert "torch.manual_seed(123)" in m34 and "W = torch.rand(3, 2)" in m34
    assert "for _ in range(3)" not in m34 and "probe =" not in m34
    assert "manual_seed" not in submission.sources[M33]


def test_the_random_state_statements_weighed_are_bounded(tmp_path):
    """Thousands of drawing demos between the seed and a needed drawn value: at most
    MAX_RANDOM_CANDIDATES are weighed (what one notebook costs does not grow with what it holds)."""
    from grader.intake.recognition import MAX_RANDOM_CANDIDATES

    demos = "\n".join(f"d{i} = torch.rand(1)" for i in range(3 * MAX_RANDOM_CANDIDATES))
    cells = ["import torch\nimport torch.nn as nn", "torch.manual_seed(123)", demos, *SEEDED_CELLS[-2:]]
    m34 = read(tmp_path, [code(c) for c in cells]).sources[M34]
    assert 0 < m34.count("= torch.rand(1)") < MAX_RANDOM_CANDIDATES
    assert "W = torch.rand(3, 2)" in m34
