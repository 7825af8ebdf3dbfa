"""Notebook submissions: the code a notebook defines, as module sources.

Two layouts are accepted, and graded exactly as the equivalent .py files would be:

* one notebook per section, named like the module (``sec3_5_causal_attention.ipynb``): every
  code cell is part of the module, in notebook order;
* one notebook for the whole chapter (any other name): each code cell belongs to the module named
  by a ``# module: <name>`` first line, a ``module:<name>`` cell tag, or the cell metadata
  ``{"attention_kit": {"module": "<name>"}}``. Later modules see everything earlier modules define
  (as the notebook's single namespace does): their source starts with ``from <earlier> import *``.
  The import statements of unassigned cells (``import torch`` at the top) are kept as a preamble.

Never part of a module: nbgrader test cells (graded, not a solution: they hold the checks, not the
student's code), cells tagged ``kit:skip`` or with ``{"attention_kit": {"skip": true}}`` (set-up
cells of generated notebooks), and cells whose body is not Python (``%%bash``, ``%%html``...).
IPython magics, shell escapes and ``obj?`` help lines become ``pass`` statements, so indentation
stays valid and line counts do not change.

Reading is strict about the file and lenient about the content: a file that is not notebook JSON
raises NotebookError (the caller records an integrity note and loses only that notebook's modules).
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from grader.records import MODULES

CHAPTER_NOTEBOOK_MARKER = re.compile(r"^#\s*module:\s*([A-Za-z0-9_]+)\s*$")
MAX_NOTEBOOK_BYTES = 8 * 1024 * 1024
# Cell magics whose body is still Python; any other cell magic makes the cell non-Python.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
SKIP_TAGS = {"kit:skip", "skip-grading"}


class NotebookError(Exception):
    """A notebook that cannot be read. `reason` names its catalogue message
    (integrity.submission.notebook-<reason>); `where` is a language-neutral detail, if any
    (where damaged JSON breaks, "line:column")."""

    def __init__(self, reason: str, where: str = ""):
        super().__init__(reason + (f" ({where})" if where else ""))
        self.reason = reason
        self.where = where


def read_notebook(path: Path) -> dict[str, Any]:
    """The notebook's JSON, checked just enough to be walked safely."""
    try:
        raw = path.read_bytes()
    except OSError:
        raise NotebookError("unreadable") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError("too-large")  # the catalogue's message names MAX_NOTEBOOK_BYTES
    try:
        document = json.loads(raw.decode("utf-8-sig", errors="replace"))
    except ValueError as exc:
        where = f"{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise NotebookError("not-json", where) from None
    if not isinstance(document, dict) or not isinstance(document.get("cells", []), list):
        raise NotebookError("no-cells")
    if "cells" not in document:
        if "worksheets" in document:  # nbformat 3
            cells = [c for ws in document.get("worksheets") or [] if isinstance(ws, dict)
                     for c in ws.get("cells") or []]
            document = {"cells": [_v3_cell(c) for c in cells if isinstance(c, dict)]}
        else:
            raise NotebookError("no-cells")
    return document


def _v3_cell(cell: dict) -> dict:
    if cell.get("cell_type") == "code":
        return {"cell_type": "code", "source": cell.get("input", ""), "metadata": cell.get("metadata", {})}
    return {"cell_type": cell.get("cell_type", "markdown"), "source": cell.get("source", ""), "metadata": {}}


def _text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def code_cells(document: dict[str, Any]) -> list[tuple[int, str, dict]]:
    """(cell number, source, metadata) of the code cells that can hold the student's code."""
    cells = []
    for number, cell in enumerate(document.get("cells", []), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbgrader = metadata.get("nbgrader") if isinstance(metadata.get("nbgrader"), dict) else {}
        if nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # an nbgrader test cell
        kit = metadata.get("attention_kit") if isinstance(metadata.get("attention_kit"), dict) else {}
        tags = metadata.get("tags") if isinstance(metadata.get("tags"), list) else []
        if kit.get("skip") or SKIP_TAGS & {t for t in tags if isinstance(t, str)}:
            continue
        cells.append((number, _text(cell.get("source")), metadata))
    return cells


def python_code(cell_source: str) -> str | None:
    """The cell as plain Python, or None when its body is not Python (``%%bash`` and the like)."""
    lines = cell_source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)[0] if lines[first].strip() != "%%" else ""
        if name not in PYTHON_CELL_MAGICS:
            return None
        lines[first] = "# " + lines[first]
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and _is_help(stripped)):
            out.append(f"{indent}pass  # {stripped}")
        else:
            out.append(line)
    return "\n".join(out)


def _is_help(line: str) -> bool:
    """`torch.tril?` or `?torch.tril`: IPython help, not Python (a `?` cannot end Python code)."""
    return bool(re.fullmatch(r"\??[A-Za-z_][\w.]*\?{1,2}", line))


def _module_of(source: str, metadata: dict) -> str | None:
    first_line = source.lstrip().split("\n", 1)[0] if source.strip() else ""
    match = CHAPTER_NOTEBOOK_MARKER.match(first_line.strip())
    if match:
        return match.group(1)
    for tag in metadata.get("tags") or []:
        if isinstance(tag, str) and tag.startswith("module:"):
            return tag.partition(":")[2].strip()
    kit = metadata.get("attention_kit")
    if isinstance(kit, dict) and isinstance(kit.get("module"), str):
        return kit["module"]
    return None


def _imports_only(code: str) -> list[str]:
    """The top-level import statements of a cell (a chapter notebook's shared preamble)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [ast.get_source_segment(code, node) or "" for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
                isinstance(node, ast.ImportFrom) and node.module == "__future__")]


def _join(parts: list[tuple[int, str]]) -> str:
    return "\n\n".join(f"# --- notebook cell {number} ---\n{code}" for number, code in parts) + "\n"


def modules_from_notebook(path: Path) -> dict[str, str]:
    """Module name -> Python source for the modules this notebook defines."""
    cells = code_cells(read_notebook(path))
    if path.stem in MODULES:
        parts = [(n, code) for n, source, _ in cells if (code := python_code(source)) is not None]
        return {path.stem: _join(parts)} if parts else {}
    preamble: list[str] = []
    modules: dict[str, list[tuple[int, str]]] = {}
    for number, source, metadata in cells:
        code = python_code(source)
        if code is None:
            continue
        module = _module_of(source, metadata)
        if module is None:
            preamble.extend(line for line in _imports_only(code) if line not in preamble)
        elif module in MODULES:
            modules.setdefault(module, []).append((number, code))
    sources: dict[str, str] = {}
    for index, (module, parts) in enumerate(modules.items()):
        earlier = list(modules)[:index]
        header = preamble + [f"from {name} import *  # defined earlier in this notebook" for name in earlier]
        sources[module] = ("\n".join(header) + "\n\n" if header else "") + _join(parts)
    return sources
