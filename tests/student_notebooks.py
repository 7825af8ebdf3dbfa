"""Notebooks written the way students of this chapter write them, generated from a submission's
modules: all code in one notebook in book order, no `# module:` lines; demo cells between the
definitions (prints, the book's examples, `torch.manual_seed`, a demo that fails); a class defined
early in a draft and again, fixed, further down; helpers and constants in cells of their own;
markdown in Chinese; a cell importing from a "module" that is really an earlier cell.

`chapter_notebook(sources, shape)` builds one; `SHAPES` names the shapes the tests grade;
`interleavings(sources)` draws one at random (hypothesis).
"""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from tests.conftest import MODULES

SIBLING = re.compile(r"^from (sec3_\w+|exercise3_\w+) import (.*)$", re.M)

# Scratch cells a student leaves between definitions: they print, seed, run the book's examples,
# and some fail (a name defined nowhere, an exception): none of this may cost anything.
SCRATCH = [
    "print(inputs)",
    "torch.manual_seed(123)",
    "inputs = torch.tensor(\n    [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],\n"
    "     [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]\n)\nprint(inputs.shape)",
    "attn_scores = inputs @ inputs.T\nattn_weights = torch.softmax(attn_scores, dim=-1)\n"
    "print(attn_weights.sum(dim=-1))",
    "print(undefined_name)  # a scratch cell that fails",
    "raise RuntimeError('a demo that raises')",
    "%matplotlib inline\nimport matplotlib_that_is_not_installed",
    "x_2 = inputs[1]\nd_in = inputs.shape[1]\nd_out = 2",
    "batch = torch.stack((inputs, inputs), dim=0)\nprint(batch.shape)",
]
CHINESE = ["## 3.3 简单自注意力", "### 计算注意力权重", "因果注意力：屏蔽未来的词元", "多头注意力", "练习"]


def code(source: str, **metadata) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [], "source": source}


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def notebook(cells: list[dict]) -> dict:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


@dataclass(frozen=True)
class Piece:
    """A top-level statement of a module: its text, whether it imports, what it defines."""

    module: str
    text: str
    imports: bool
    names: tuple[str, ...]


def pieces(sources: dict[str, str]) -> list[Piece]:
    """The modules' top-level statements in book order (docstrings dropped)."""
    out = []
    for module in MODULES:
        if module not in sources:
            continue
        source = sources[module]
        lines = source.splitlines()
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a module that does not parse stays one cell
            out.append(Piece(module, source, False, ()))
            continue
        for node in tree.body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(lines[first - 1 : node.end_lineno])
            names = (node.name,) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ()
            out.append(Piece(module, text, isinstance(node, (ast.Import, ast.ImportFrom)), names))
    return out


def chapter_notebook(sources: dict[str, str], shape: str, seed: int = 0) -> dict:
    """The modules as one student's chapter notebook of `shape` (see SHAPES)."""
    rng = random.Random(seed)
    cells: list[dict] = [markdown("# 第 3 章 注意力机制\n\n我的练习。")]
    seen_imports: set[str] = set()
    if any("import torch" in source for source in sources.values()):
        cells.append(code("import torch\nimport torch.nn as nn"))
        seen_imports = {"import torch", "import torch.nn as nn"}
    for index, piece in enumerate(pieces(sources)):
        if piece.imports:
            if shape == "cross-cell-imports" and SIBLING.match(piece.text):
                cells.append(code(piece.text))  # imports from a "module" that is an earlier cell
            elif not SIBLING.match(piece.text) and piece.text not in seen_imports:
                seen_imports.add(piece.text)
                cells.append(code(piece.text))
            continue
        if shape != "plain" and index % 3 == 0:
            cells.append(markdown(rng.choice(CHINESE)))
        if shape == "redefined" and piece.names and piece.names[0][0].isupper():
            # a first draft, broken, then the fixed version further down (the later one is the answer)
            cells.append(code(_draft(piece.text)))
            cells.append(code(f"draft = {piece.names[0]}  # tried it out"))
        cells.append(code(piece.text))
        if shape in ("demos", "redefined", "cross-cell-imports", "helpers"):
            cells.append(code(rng.choice(SCRATCH)))
    if shape == "helpers":
        cells = _with_helper_cells(cells)
    return notebook(cells)


def _draft(text: str) -> str:
    """A class's first draft: its forward raises (a student's unfinished version)."""
    return re.sub(
        r"(\n    def forward\(self, x\):\n)", r"\1        raise NotImplementedError  # draft\n", text, count=1
    )


def _with_helper_cells(cells: list[dict]) -> list[dict]:
    """A helper function and a constant in cells of their own, used by a later definition."""
    helper = code("def _neg_inf():\n    return -torch.inf")
    constant = code("DIAGONAL = 1")
    out = []
    for cell in cells:
        source = cell["source"]
        if cell["cell_type"] == "code" and "class CausalAttention" in source and "-torch.inf" in source:
            out += [helper, constant]
            source = source.replace("-torch.inf", "_neg_inf()").replace("diagonal=1", "diagonal=DIAGONAL")
            cell = code(source)
        out.append(cell)
    return out


SHAPES = ("plain", "demos", "redefined", "helpers", "cross-cell-imports")


def write_notebook(folder: Path, document: dict, name: str = "ch3.ipynb") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def module_sources(folder: Path) -> dict[str, str]:
    return {m: (folder / f"{m}.py").read_text(encoding="utf-8") for m in MODULES if (folder / f"{m}.py").exists()}


# Scratch cells that fail or bind a name a module requires to a demo value (before its definition).
FAILING_SCRATCH = ["print(undefined_name)", "raise ValueError('demo')", "1 / 0", "attention_weights = 'a demo value'"]


@st.composite
def interleavings(draw, sources: dict[str, str]) -> list[dict]:
    """The modules' definitions in book order as one notebook, and anywhere between them what a
    student leaves: scratch cells (some failing), markdown in Chinese, a class's broken first draft
    before it, a cell importing from a "module" that is an earlier cell."""
    cells = [code("import torch\nimport torch.nn as nn")]
    seen = {"import torch", "import torch.nn as nn"}
    for piece in pieces(sources):
        if piece.imports:
            sibling = SIBLING.match(piece.text)
            if (sibling and draw(st.booleans())) or (not sibling and piece.text not in seen):
                seen.add(piece.text)
                cells.append(code(piece.text))
            continue
        for _ in range(draw(st.integers(0, 2))):
            cells.append(code(draw(st.sampled_from(SCRATCH + FAILING_SCRATCH))))
        if draw(st.booleans()):
            cells.append(markdown(draw(st.sampled_from(CHINESE))))
        if piece.names and piece.names[0][0].isupper() and draw(st.integers(0, 3)) == 0:
            cells.append(code(_draft(piece.text)))
        cells.append(code(piece.text))
    return cells


# -- comparing a notebook's grading with its modules' -----------------------------------------------------

# where in the student's code: a .py file (a module's name is the grader's words) or a notebook's cell, a line
WHERE = re.compile(r"`[^`\n]+\.ipynb`, code cell \d+|`[^`\n]+\.py`|\b\w+\.py|line \d+")


def student_line(folder: Path, diagnosis: dict) -> str:
    """The student's line a diagnosis points at, read from their .py file or notebook cell."""
    if diagnosis["cell"]:
        document = json.loads((folder / diagnosis["file"]).read_text(encoding="utf-8"))
        cells = [c for c in document["cells"] if c["cell_type"] == "code"]
        return cells[diagnosis["cell"] - 1]["source"].split("\n")[diagnosis["line"] - 1].strip()
    return (folder / diagnosis["file"]).read_text(encoding="utf-8").split("\n")[diagnosis["line"] - 1].strip()


def said(message: str) -> str:
    """A message without where in the student's code it points (and the words that name a .py file
    or the notebook a missing function should have been in)."""
    message = re.sub(
        r"The code found for (\w+) in your notebook `[^`]+` does not define", r"\1.py does not define", message
    )
    return WHERE.sub("<where>", message)


def assert_graded_alike(py: dict, py_folder: Path, nb: dict, nb_folder: Path, same_messages: bool = True) -> None:
    """The notebook's results.json says what the modules' says: the score, each test's outcome,
    message and diagnosis (pointing at the same line of the student's code), and every module
    was recognised in the notebook."""
    assert (nb["score"], nb["max_score"], nb["track"]) == (py["score"], py["max_score"], py["track"])
    assert [n for n in nb["integrity"] if not n["kind"].startswith(("sandbox.", "deploy."))] == []
    for a, b in zip(py["tests"], nb["tests"], strict=True):
        assert (b["id"], b["status"], b["points"], b["misconception"], b["blocked_by"]) == (
            a["id"],
            a["status"],
            a["points"],
            a["misconception"],
            a["blocked_by"],
        ), a["id"]
        if same_messages:  # (a misspelt class fails 3.6's importers in modules, its callers in a notebook)
            assert said(b["message"]) == said(a["message"]), a["id"]
        da, db = a["diagnosis"], b["diagnosis"]
        assert (da is None) == (db is None), a["id"]
        if da is not None:
            assert (db["misconceptions"], db["checkpoint"], db["evidence"]) == (
                da["misconceptions"],
                da["checkpoint"],
                da["evidence"],
            )
            assert (db["line"] is None) == (da["line"] is None)
            if da["line"] is not None:
                assert db["file"] == "ch3.ipynb" and db["cell"]
                assert student_line(nb_folder, db) == student_line(py_folder, da)
    found = {f["module"]: f for f in nb["found"]}
    assert all(f["how"] == "recognised" and f["file"] == "ch3.ipynb" and f["cells"] for f in found.values())
