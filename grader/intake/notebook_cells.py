"""From notebook cells to module sources, remembering where every line came from.

`section_module` makes one module of every code cell of a notebook named like the module;
`grader.intake.chapter` makes the modules of a chapter notebook (see `grader.intake.notebooks` for
the layouts). Each generated line carries a `LineOrigin` (notebook, code cell number, line in the
cell) or None for lines the grader adds, and `in_notebook_terms` turns a traceback frame of a
generated module back into the cell and line the student wrote. A cell is numbered as Jupyter's
users count it: its place among the notebook's code cells (markdown cells are not counted).

Lines are the tokenizer's (`grader.intake.lines`; a notebook's "\r" and "\r\n" are "\n" by now).
Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Set
from dataclasses import dataclass, replace
from typing import Any

from grader.intake.magics import Magics
from grader.records import LineOrigin, StudentFrame

CHAPTER_NOTEBOOK_MARKER = re.compile(r"^#\s*module:\s*([A-Za-z0-9_]+)\s*$")
_TOP_LEVEL_NAME = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+(\w+)|^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_LOCATION_IN_MESSAGE = re.compile(r"\((\w+)\.py, line (\d+)\)")
# The course's public checks, released beside a chapter notebook: a cell that runs them imports
# them, but they are not the student's code, nor there where the code is graded.
PUBLIC_CHECK_MODULES = frozenset({"ch3_checks", "ch3_check_list", "ch3_check_tools"})


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def tags(metadata: dict) -> list[str]:
    """A cell's tags (only a list of strings counts)."""
    found = metadata.get("tags")
    return [t for t in found if isinstance(t, str)] if isinstance(found, list) else []


@dataclass(frozen=True)
class GeneratedModule:
    """A module's source made from notebook cells, the origin of each of its lines, and how its
    cells were found: "notebook" (every code cell of a notebook named like the module), "marked"
    (cells with its `# module:` line) or "recognised" (by the names it defines: `names`)."""

    source: str
    origins: Origins  # see origin_at
    how: str = "notebook"
    names: tuple[str, ...] = ()
    defining: tuple[int, ...] = ()  # recognised: the cells that define or change its names

    @property
    def cells(self) -> tuple[int, ...]:
        """The code cells that define or change its names (a recognised module's), else every code
        cell its lines come from (a cell that only repeats `import torch` is not listed)."""
        return self.defining or tuple(sorted({origin.cell for _, origin in self.origins if origin is not None}))


def _module_of(source: str, metadata: dict) -> str | None:
    first_line = source.lstrip().split("\n", 1)[0] if source.strip() else ""
    match = CHAPTER_NOTEBOOK_MARKER.match(first_line.strip())
    if match:
        return match.group(1)
    for tag in tags(metadata):
        if tag.startswith("module:"):
            return tag.partition(":")[2].strip()
    kit = _dict(metadata.get("attention_kit"))
    if isinstance(kit.get("module"), str):
        return kit["module"]
    return None


def _string_continuations(lines: list[str]) -> set[int]:
    """1-based numbers of lines that continue a multi-line string (re-indenting them would change
    the string)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if token.start[0] < token.end[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    return inside


# Where the lines of a generated module came from, as runs: (first line of the run in the generated
# module, 1-based; the origin of that line, or None for lines the grader added). Each following
# line of a run comes from the next line of the same cell. A cell is one run, whatever its length.
Origins = tuple[tuple[int, "LineOrigin | None"], ...]


def origin_at(runs: Origins, line: int) -> LineOrigin | None:
    """The origin of line `line` (1-based) of a generated module."""
    index = bisect.bisect_right(runs, line, key=lambda run: run[0]) - 1
    if index < 0:
        return None
    start, origin = runs[index]
    return None if origin is None else LineOrigin(origin.notebook, origin.cell, origin.line + line - start)


class _Builder:
    """A generated module: its text in chunks (a whole cell is one) and where its lines came from."""

    def __init__(self, notebook: str):
        self.notebook = notebook
        self.chunks: list[str] = []
        self.count = 0  # lines so far
        self.runs: list[tuple[int, LineOrigin | None]] = []
        self._next: tuple[int, int] | None = None  # (cell, line) that would continue the last run

    def _add(self, text: str, cell: int | None = None, line: int = 0) -> None:
        start = self.count + 1
        self.chunks.append(text)
        self.count += text.count("\n") + 1
        if cell is None:
            if not self.runs or self.runs[-1][1] is not None:
                self.runs.append((start, None))
            self._next = None
            return
        if self._next != (cell, line):
            self.runs.append((start, LineOrigin(self.notebook, cell, line)))
        self._next = (cell, line + self.count - start + 1)

    def generated(self, line: str) -> None:
        self._add(line)

    def cell(self, number: int, code: str) -> None:
        self.generated(f"# --- code cell {number} ---")
        self._add(code, number, 1)

    def lines_of(
        self, number: int, lines: list[str], first: int, last: int, indent: str = "", keep: Set[int] = frozenset()
    ) -> None:
        for index in range(first, last + 1):
            line = lines[index - 1]
            self._add(line if index in keep or not line.strip() else indent + line, number, index)

    def module(
        self, how: str = "notebook", names: tuple[str, ...] = (), defining: tuple[int, ...] = ()
    ) -> GeneratedModule:
        return GeneratedModule("\n".join(self.chunks) + "\n", tuple(self.runs), how, names, defining)


def section_module(cells: list[tuple[int, str, dict]], shown_name: str) -> GeneratedModule | None:
    """Every Python code cell of a notebook named like its module, in order. The module is read
    as UTF-8 (a cell is text already), whatever a cell declares."""
    builder = _Builder(shown_name)
    magics = Magics()
    parts = [(n, code) for n, source, _ in cells if (code := magics.python_code(source)) is not None]
    builder.generated("")  # the first cell starts on line 3: a coding line in it is no declaration (PEP 263)
    for index, (number, code) in enumerate(parts):
        if index:
            builder.generated("")
        builder.cell(number, code)
    return builder.module() if parts else None


def in_notebook_terms(frame: StudentFrame, origins: dict[str, Origins]) -> StudentFrame:
    """A frame of a module made from a notebook, as the notebook's cell and line; others unchanged."""
    module = frame.file[:-3] if frame.file.endswith(".py") else ""
    runs = origins.get(module)
    if not runs or frame.cell or not isinstance(frame.line, int) or frame.line < 1:
        return frame
    origin = origin_at(runs, frame.line)
    if origin is None:
        return frame
    return replace(frame, file=origin.notebook, line=origin.line, cell=origin.cell)


def message_in_notebook_terms(message: str, origins: dict[str, Origins]) -> str:
    """Python's "(sec3_5_causal_attention.py, line 12)" in a syntax error's message, as the cell."""

    def place(match: re.Match) -> str:
        frame = in_notebook_terms(StudentFrame(f"{match.group(1)}.py", int(match.group(2)), "", ""), origins)
        return f"({frame.file}, code cell {frame.cell}, line {frame.line})" if frame.cell else match.group()

    return _LOCATION_IN_MESSAGE.sub(place, message) if origins and len(message) < 100_000 else message
