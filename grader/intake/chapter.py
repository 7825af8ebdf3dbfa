"""The modules of a chapter notebook (one notebook, any name, for several sections).

Each code cell's top-level statements are analysed once (`grader.intake.statements`, within a
budget: MAX_SCANNED_CELL per cell, MAX_SCANNED_TOTAL per notebook; a cell past it is read only for
the names its lines define). A notebook's cells are read at all up to MAX_READ_TOTAL characters of
code: a cell past that contributes no names and no code (`ChapterCell.unread`; the submission
gets a note naming those cells), so what one notebook costs does not grow with what it holds.
Then:

* a module with `# module:` cells (or `module:<name>` tags, or `{"attention_kit": {"module": ...}}`
  metadata) is made of those cells, as before: later modules see everything earlier ones define
  (`from <earlier> import *`), and cells without a marker contribute their imports (a preamble)
  and their function and class definitions (each guarded, in notebook order), never their other
  statements, nor imports of the course's public checks;
* any other module is recognised by the names the contract requires (`grader.intake.recognition`):
  the last definition of each and every statement it needs, nothing else (but the seeding and
  drawing statements before a needed value drawn from the random state, each guarded).

Every generated line remembers its code cell and line (`grader.intake.notebook_cells`).
Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.intake.lines import source_lines
from grader.intake.magics import Magics
from grader.intake.notebook_cells import (
    _TOP_LEVEL_NAME,
    PUBLIC_CHECK_MODULES,
    GeneratedModule,
    _Builder,
    _module_of,
    _string_continuations,
)
from grader.intake.parsing import MAX_PARSED_CHARS
from grader.intake.recognition import Recognised, Unit, recognise
from grader.intake.statements import Statement, cell_statements
from grader.records import MODULES

MAX_SCANNED_CELL = MAX_PARSED_CHARS  # a cell longer than this is not analysed, only searched for names
MAX_SCANNED_TOTAL = 128 * 1024  # nor any once this much code of the notebook has been analysed
MAX_READ_TOTAL = 1024 * 1024  # a cell past this much code of the notebook is not read at all


@dataclass(frozen=True)
class ChapterCell:
    number: int  # the code cell's number (1-based, among the notebook's code cells)
    owner: str | None  # the module its marker names, if any
    code: str
    lines: list[str]
    statements: list[Statement]
    unread: bool = False  # past the notebook's reading budget: no names, no code


@dataclass(frozen=True)
class Defined:
    """A top-level function or class of a notebook, where the student wrote it."""

    name: str
    cell: int
    line: int


def _opaque(code: str, lines: list[str]) -> Statement:
    names = {m.group(1) or m.group(2) for m in _TOP_LEVEL_NAME.finditer(code)}
    defines = {m.group(1) for m in _TOP_LEVEL_NAME.finditer(code) if m.group(1)}
    empty: frozenset[str] = frozenset()
    return Statement(1, max(1, len(lines)), frozenset(names), frozenset(defines), empty, empty, opaque=True)


def analysed_cells(cells: list[tuple[int, str, dict]]) -> list[ChapterCell]:
    """The Python code cells with their markers and statements (see the module's docstring)."""
    out = []
    budget, left = MAX_SCANNED_TOTAL, MAX_READ_TOTAL
    magics = Magics()
    for number, source, metadata in cells:
        if len(source) > left:
            left = 0
            out.append(ChapterCell(number, None, "", [], [], unread=True))
            continue
        code = magics.python_code(source)
        if code is None:
            continue
        left -= len(source)
        owner = _module_of(source, metadata)
        if owner is not None and owner not in MODULES:
            continue  # marked for something that is no module of the exercise
        lines = source_lines(code)
        statements = None
        if len(code) <= min(MAX_SCANNED_CELL, budget):
            budget -= len(code)
            statements = cell_statements(code)
        if statements is None:
            statements = [_opaque(code, lines)] if code.strip() else []
        out.append(ChapterCell(number, owner, code, lines, statements))
    return out


def unread_cells(cells: list[ChapterCell]) -> tuple[int, ...]:
    """The numbers of the code cells past the notebook's reading budget."""
    return tuple(cell.number for cell in cells if cell.unread)


def definitions(cells: list[ChapterCell]) -> tuple[Defined, ...]:
    """Every top-level `def` and `class` of the notebook (for names that look misspelt)."""
    return tuple(
        Defined(name, cell.number, st.first) for cell in cells for st in cell.statements for name in sorted(st.defines)
    )


def chapter_modules(
    cells: list[ChapterCell], shown_name: str, taken: frozenset[str] = frozenset()
) -> dict[str, GeneratedModule]:
    """The modules of a chapter notebook: marked ones, then recognised ones (not `taken`: a .py
    file or an earlier notebook gives those)."""
    modules = _marked_modules(cells, shown_name)
    units = [Unit(cell.number, cell.lines, st, cell.owner) for cell in cells for st in cell.statements]
    for found in recognise(units, set(taken) | set(modules)):
        modules[found.module] = _recognised_module(found, units, shown_name)
    return modules


# -- marked cells ----------------------------------------------------------------------------------


def _imports(cell: ChapterCell) -> list[Statement]:
    return [
        st
        for st in cell.statements
        if st.parts == 1
        and st.imports
        and not st.opaque
        and st.imports_from != "__future__"
        and not st.modules & PUBLIC_CHECK_MODULES
    ]


def _marked_modules(cells: list[ChapterCell], shown_name: str) -> dict[str, GeneratedModule]:
    modules = list(dict.fromkeys(cell.owner for cell in cells if cell.owner is not None))
    if not modules:
        return {}
    # Names the module cells define: an unmarked cell never replaces them (a draft left in a
    # scratch cell does not override the student's marked solution).
    marked = {m.group(1) or m.group(2) for c in cells if c.owner for m in _TOP_LEVEL_NAME.finditer(c.code)}
    preamble: list[tuple[ChapterCell, Statement]] = []
    seen: set[str] = set()
    for cell in cells:
        if cell.owner is None:
            for st in _imports(cell):
                text = "\n".join(cell.lines[st.first - 1 : st.last])
                if text not in seen:
                    seen.add(text)
                    preamble.append((cell, st))
    sources: dict[str, GeneratedModule] = {}
    for index, module in enumerate(modules):
        builder = _Builder(shown_name)
        for cell, st in preamble:
            builder.lines_of(cell.number, cell.lines, st.first, st.last)
        for name in modules[:index]:
            builder.generated(f"from {name} import *  # defined earlier in this notebook")
        if preamble or index:
            builder.generated("")
        for cell in cells:
            if cell.owner == module:
                builder.generated("")
                builder.cell(cell.number, cell.code)
            elif cell.owner is None:
                _definitions(builder, cell, marked)
        sources[module] = builder.module(how="marked")
    return sources


def _definitions(builder: _Builder, cell: ChapterCell, marked: set[str]) -> None:
    """An unmarked cell's definitions, each in `try: ... except Exception: pass`: a helper whose
    definition needs a name this module lacks is skipped here, as it would have been unusable."""
    found = [
        st
        for st in cell.statements
        if st.parts == 1
        and not st.opaque
        and len(st.defines) == 1
        and st.binds == st.defines
        and not st.defines & marked
    ]
    if not found:
        return
    strings = _string_continuations(cell.lines)
    builder.generated("")
    builder.generated(f"# --- definitions from code cell {cell.number} ---")
    for st in found:
        _guarded(builder, cell, st, strings)


def _guarded(builder: _Builder, cell: ChapterCell | Unit, st: Statement, strings: set[int]) -> None:
    builder.generated("try:")
    builder.lines_of(
        cell.cell if isinstance(cell, Unit) else cell.number, cell.lines, st.first, st.last, "    ", strings
    )
    builder.generated("except Exception:")
    builder.generated("    pass")


# -- recognised modules ------------------------------------------------------------------------------


def _recognised_module(found: Recognised, units: list[Unit], shown_name: str) -> GeneratedModule:
    builder = _Builder(shown_name)
    # two lines of the grader's first: no line of a cell is read as a coding declaration (PEP 263)
    builder.generated("# --- recognised in a notebook by the names it defines ---")
    builder.generated("")
    for source, names in found.imports.items():
        builder.generated(f"from {source} import {', '.join(names)}  # defined in this notebook")
    for position in found.preamble:  # a cell that does not parse may need any import of the notebook
        unit = units[position]
        _guarded(builder, unit, unit.statement, _string_continuations(unit.lines))
    guarded = set(found.guarded)  # kept for the random state: a demo that fails costs nothing
    for position in found.units:
        unit = units[position]
        if unit.statement.imports:
            _emit(builder, unit, position in guarded)
    cell = None
    for position in found.units:
        unit = units[position]
        if unit.statement.imports:
            continue
        if unit.cell != cell:
            cell = unit.cell
            builder.generated("")
            builder.generated(f"# --- code cell {cell} ---")
        _emit(builder, unit, position in guarded)
    defining = tuple(
        sorted({units[p].cell for p in found.units if not units[p].statement.imports and p not in guarded})
    )
    return builder.module(how="recognised", names=found.names, defining=defining)


def _emit(builder: _Builder, unit: Unit, guarded: bool) -> None:
    if guarded:
        _guarded(builder, unit, unit.statement, _string_continuations(unit.lines))
    else:
        builder.lines_of(unit.cell, unit.lines, unit.statement.first, unit.statement.last)
