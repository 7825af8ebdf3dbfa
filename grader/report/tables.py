"""A failing check's values as tables a student can read: the expected values and the student's,
one cell per value, each row labelled (a token of the first batch item of a 3-D tensor, else a
row), only the student's differing cells marked, and rows the student's code repeats noted.

The suites send a 2-D slice of what they compared (`grader.suites.compare._table`: the first batch
item of a 3-D tensor, its first rows and columns) and the compared tensor's shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from grader.i18n import Catalog
from grader.records import TestOutcome
from grader.report.sentences import Said, inline, number, say


@dataclass
class Cell:
    text: str
    differs: bool = False


@dataclass
class Table:
    """Expected and actual values, one cell per value; only the student's differing cells marked."""

    expected: list[list[Cell]]
    actual: list[list[Cell]]
    truncated: bool = False  # the test compared more entries than shown
    caption: Said | str = ""  # what the rows are: "Batch item 1 of 3, one row per token"
    rows: list[str] | None = None  # a label per row ("token 1")
    columns: list[str] | None = None  # a label per column ("1", "2", ...)
    repeated: list[Said] | None = None  # "Your rows 2-5 are all the same as row 1."

    def aligned(self, actual: bool, mark: str = "*") -> list[str]:
        """The expected (or the student's) values as lines of plain text, every column right-aligned
        to one width for both tables; the student's differing values end with `mark`."""
        rows = self.rows or [""] * max(len(self.expected), len(self.actual))
        columns = self.columns or []
        cells = [
            [c.text + (mark if actual and c.differs else "") for c in row]
            for row in (self.actual if actual else self.expected)
        ]
        every = [[c.text + mark for c in row] for row in self.expected + self.actual]
        widths = [
            max([len(columns[j]) if j < len(columns) else 0] + [len(r[j]) for r in every if j < len(r)])
            for j in range(len(columns))
        ]
        label = max((len(r) for r in rows), default=0)
        lines = [" " * label + "  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
        for name, row in zip(rows, cells, strict=False):
            text = "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=False))
            lines.append(name.ljust(label) + "  " + text + ("  …" if self.truncated else ""))
        return [line.rstrip() for line in lines]


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4f}"
    if isinstance(value, int):
        return number(value)
    return inline(value, limit=40)


def _matrix(value: Any) -> list[list[Any]]:
    if isinstance(value, (list, tuple)) and value and all(isinstance(row, (list, tuple)) for row in value):
        return [list(row) for row in value]
    if isinstance(value, (list, tuple)):
        return [list(value)]
    return [[value]]


def _repeats(rows: list[list[Cell]], catalog: Catalog) -> list[Said]:
    """Runs of 2 or more rows of the student's that equal the row before them (every value the same)."""
    notes: list[Said] = []
    start = 0
    for index in range(1, len(rows) + 1):
        if index < len(rows) and [c.text for c in rows[index]] == [c.text for c in rows[start]]:
            continue
        if index - start >= 2:
            notes.append(say(catalog, "report.table.repeated", first=start + 2, last=index, row=start + 1))
        start = index
    return notes


def value_table(outcome: TestOutcome, catalog: Catalog) -> Table | None:
    detail = outcome.detail
    if detail is None or detail.expected is None or detail.actual is None:
        return None
    expected, actual = _matrix(detail.expected), _matrix(detail.actual)
    differs = _matrix(detail.differs) if detail.differs is not None else None

    def flag(i: int, j: int) -> bool:
        if differs is not None:
            try:
                return bool(differs[i][j])
            except (IndexError, TypeError):
                return False
        try:
            return expected[i][j] != actual[i][j]
        except IndexError:
            return True

    shape = detail.params.get("shape")
    shape = [int(s) for s in shape] if isinstance(shape, (list, tuple)) and all(_int(s) for s in shape) else []
    shown = sum(len(row) for row in expected)
    truncated = bool(shape) and math.prod(shape) > shown
    caption: Said | str = ""
    if len(shape) == 3:
        caption = say(catalog, "report.table.batch-item", count=shape[0], tokens=shape[1], values=shape[2])
        label = "report.table.token"
    else:
        label = "report.table.row"
    table_actual = [[Cell(_format(v), flag(i, j)) for j, v in enumerate(row)] for i, row in enumerate(actual)]
    width = max((len(row) for row in expected + actual), default=0)
    return Table(
        [[Cell(_format(v)) for v in row] for row in expected],
        table_actual,
        truncated,
        caption,
        [catalog.t(label, n=i + 1) for i in range(max(len(expected), len(actual)))],
        [str(j + 1) for j in range(width)],
        _repeats(table_actual, catalog) if len(table_actual) > 2 else [],
    )


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9
