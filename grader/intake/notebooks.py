"""Notebook submissions: the code a notebook defines, as module sources.

Two layouts are accepted, and graded exactly as the equivalent .py files would be:

* one notebook per section, named like the module (``sec3_5_causal_attention.ipynb``): every
  code cell is part of the module, in notebook order;
* any other notebook: a notebook for the chapter (or part of it). A code cell belongs to the
  module named by a ``# module: <name>`` first line, a ``module:<name>`` cell tag, or the cell
  metadata ``{"attention_kit": {"module": "<name>"}}``; a module without such cells is recognised
  by the names the contract requires, the last definition of each and what it needs
  (`grader.intake.chapter`, `grader.intake.recognition`).

Never part of a module: nbgrader test cells (graded, not a solution: they hold the checks, not the
student's code; in a notebook named like a module, which holds no test cells of the course's, the
numbers of such cells are given for a note, `NotebookCode.test_cells`), cells tagged ``kit:skip``
or with ``{"attention_kit": {"skip": true}}`` (set-up cells of generated notebooks), and cells
whose body is not Python (``%%bash``, ``%%html``...).
IPython magics, shell escapes and ``obj?`` help lines become ``pass`` statements, so indentation
stays valid and line counts do not change; a line is one only where IPython's own transformer
finds one, at the start of a logical line (`grader.intake.magics`).

Every generated line remembers where it came from (`LineOrigin`: notebook, cell, line in the cell),
so that feedback names the cell and line the student wrote, not a line of the generated module.

Reading is strict about the file and lenient about the content, and it is defensive: the size is
capped before parsing, the number of JSON values is counted before `json.loads` builds them,
every field may have any type, and Python code is parsed in this (trusted) process only in small
pieces. A file that cannot be used raises NotebookError (the caller records an integrity note and
loses only that notebook's modules); no other exception leaves this module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.intake.chapter import Defined, analysed_cells, chapter_modules, definitions, unread_cells
from grader.intake.files import Refused, read_file
from grader.intake.magics import python_code
from grader.intake.notebook_cells import CHAPTER_NOTEBOOK_MARKER, GeneratedModule, section_module, tags
from grader.intake.printable import replace_surrogates
from grader.records import MODULES

__all__ = [
    "CHAPTER_NOTEBOOK_MARKER",
    "MAX_NOTEBOOK_BYTES",
    "GeneratedModule",
    "NotebookCode",
    "NotebookError",
    "code_cells",
    "modules_from_notebook",
    "notebook_code",
    "notebook_modules",
    "parse_notebook",
    "python_code",
    "read_notebook",
]

MAX_NOTEBOOK_BYTES = 8 * 1024 * 1024
# JSON values (objects, arrays, strings, numbers...): json.loads makes an object of each, ~50 to
# 100 bytes; a notebook of 1,000 cells with their outputs has some 50,000.
MAX_VALUES = 300_000
SKIP_TAGS = {"kit:skip", "skip-grading"}
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


class NotebookError(Exception):
    """A notebook that cannot be read. `reason` names its catalogue message
    (integrity.submission.notebook-<reason>); `where` is a language-neutral detail, if any
    (where damaged JSON breaks, "line:column")."""

    def __init__(self, reason: str, where: str = ""):
        super().__init__(reason + (f" ({where})" if where else ""))
        self.reason = reason
        self.where = where


# -- the notebook's JSON -----------------------------------------------------------------------------


def parse_notebook(raw: bytes) -> dict[str, Any]:
    """The notebook's cells from its bytes: {"cells": [cell dicts]}, checked enough to walk."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError("too-large")  # the catalogue's message names MAX_NOTEBOOK_BYTES
    if _values(raw) > MAX_VALUES:
        raise NotebookError("too-complex")
    try:
        document = json.loads(raw.decode("utf-8-sig", errors="replace"))
    except json.JSONDecodeError as exc:
        raise NotebookError("not-json", f"{exc.lineno}:{exc.colno}") from None
    except (ValueError, RecursionError, MemoryError):
        raise NotebookError("too-complex") from None
    if not isinstance(document, dict):
        raise NotebookError("no-cells")
    if "cells" in document:
        cells = document["cells"]
        if not isinstance(cells, list):
            raise NotebookError("no-cells")
        return {"cells": [c for c in cells if isinstance(c, dict)]}
    worksheets = document.get("worksheets")  # nbformat 3
    if not isinstance(worksheets, list):
        raise NotebookError("no-cells")
    cells = [
        c
        for ws in worksheets
        if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
        for c in ws["cells"]
        if isinstance(c, dict)
    ]
    return {"cells": [_v3_cell(c) for c in cells]}


def _values(raw: bytes) -> int:
    """About how many values json.loads would make of `raw` (one per array or object, and one per
    comma: a value follows each), brackets and commas inside strings left out."""
    count = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    if count <= MAX_VALUES:
        return count  # cheap: even counting those inside strings, it is small enough
    bare = _STRING.sub(b"", raw)
    return bare.count(b"{") + bare.count(b"[") + bare.count(b",")


def read_notebook(path: Path) -> dict[str, Any]:
    """The notebook at `path` (read by intake's rules: no link, no special file, size capped)."""
    try:
        raw = read_file(Path(path), MAX_NOTEBOOK_BYTES)
    except Refused as exc:
        raise NotebookError("too-large" if exc.reason == "too-large" else "unreadable") from None
    return parse_notebook(raw)


def _v3_cell(cell: dict) -> dict:
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    if cell.get("cell_type") == "code":
        return {"cell_type": "code", "source": cell.get("input", ""), "metadata": metadata}
    return {"cell_type": cell.get("cell_type", "markdown"), "source": cell.get("source", ""), "metadata": {}}


def _text(source: Any) -> str:
    """A cell's source as text Python can take: its own line ends, and a lone surrogate (JSON can
    escape one, "\\ud800"; no file can hold it) as U+FFFD, as an undecodable byte of a .py file is."""
    if isinstance(source, list):
        text = "".join(part for part in source if isinstance(part, str))
    else:
        text = source if isinstance(source, str) else ""
    return replace_surrogates(text.replace("\r\n", "\n").replace("\r", "\n"))  # Python's own line ends


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _is_test_cell(metadata: dict) -> bool:
    nbgrader = _dict(metadata.get("nbgrader"))
    return bool(nbgrader.get("grade") and not nbgrader.get("solution"))


def _numbered_code_cells(document: dict[str, Any]) -> list[tuple[int, dict]]:
    """(number, cell) of every code cell: its place among the code cells, as Jupyter's users count
    them (markdown cells are not counted)."""
    cells = [c for c in document.get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]
    return list(enumerate(cells, start=1))


def test_cell_numbers(document: dict[str, Any]) -> list[int]:
    """The numbers of the code cells marked as nbgrader test cells."""
    return [n for n, cell in _numbered_code_cells(document) if _is_test_cell(_dict(cell.get("metadata")))]


def code_cells(document: dict[str, Any]) -> list[tuple[int, str, dict]]:
    """(code cell number, source, metadata) of the code cells that can hold the student's code."""
    cells = []
    for number, cell in _numbered_code_cells(document):
        metadata = _dict(cell.get("metadata"))
        if _is_test_cell(metadata):
            continue  # an nbgrader test cell
        kit = _dict(metadata.get("attention_kit"))
        if kit.get("skip") or SKIP_TAGS & set(tags(metadata)):
            continue
        cells.append((number, _text(cell.get("source")), metadata))
    return cells


@dataclass(frozen=True)
class NotebookCode:
    """What a notebook gives the grader: module name -> generated module; in a notebook named like a
    module, the numbers of the code cells left out as nbgrader test cells; in any other, its
    top-level functions and classes (`definitions`: what it defines, for the report) and the code
    cells past its reading budget (`unread_cells`: `grader.intake.chapter.MAX_READ_TOTAL`)."""

    modules: dict[str, GeneratedModule]
    test_cells: tuple[int, ...] = ()
    definitions: tuple[Defined, ...] = ()
    unread_cells: tuple[int, ...] = ()


def notebook_modules(raw: bytes, filename: str, shown_name: str | None = None) -> dict[str, GeneratedModule]:
    """Module name -> generated module, for the modules the notebook `filename` defines.
    `shown_name` is how feedback names the notebook (default: `filename`). Raises NotebookError."""
    return notebook_code(raw, filename, shown_name).modules


def notebook_code(
    raw: bytes, filename: str, shown_name: str | None = None, taken: frozenset[str] = frozenset()
) -> NotebookCode:
    """The modules the notebook `filename` defines (but those `taken`, which a .py file or an
    earlier notebook gives, are never recognised in it by their names) and the test cells it
    leaves out (see `NotebookCode`). Raises NotebookError."""
    try:
        return _notebook_code(parse_notebook(raw), filename, shown_name or filename, taken)
    except NotebookError:
        raise
    except (RecursionError, MemoryError):
        raise NotebookError("too-complex") from None
    except Exception:  # noqa: BLE001 - whatever else a hostile file provokes: it is not a usable notebook
        raise NotebookError("malformed") from None


def _notebook_code(document: dict[str, Any], filename: str, shown_name: str, taken: frozenset[str]) -> NotebookCode:
    cells = code_cells(document)
    stem = filename[: -len(".ipynb")] if filename.endswith(".ipynb") else filename
    if stem in MODULES:
        module = section_module(cells, shown_name)
        return NotebookCode({stem: module} if module is not None else {}, tuple(test_cell_numbers(document)))
    chapter = analysed_cells(cells)
    modules = chapter_modules(chapter, shown_name, taken)
    return NotebookCode(modules, definitions=definitions(chapter), unread_cells=unread_cells(chapter))


def modules_from_notebook(path: Path) -> dict[str, str]:
    """Module name -> Python source for the modules the notebook at `path` defines."""
    try:
        raw = read_file(Path(path), MAX_NOTEBOOK_BYTES)
    except Refused as exc:
        raise NotebookError("too-large" if exc.reason == "too-large" else "unreadable") from None
    return {module: generated.source for module, generated in notebook_modules(raw, Path(path).name).items()}
