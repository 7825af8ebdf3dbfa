"""Notebooks written the way students of this chapter write them, generated from a submission's
modules: all code in one notebook in book order, no `# module:` lines; demo cells between the
definitions (prints, the book's examples, `torch.manual_seed`, a demo that fails); a class defined
early in a draft and again, fixed, further down; helpers and constants in cells of their own;
markdown in Chinese; a cell importing from a "module" that is really an earlier cell.

`chapter_notebook(sources, shape)` builds one; `SHAPES` names the shapes the tests grade.
"""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

MODULES = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]
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
