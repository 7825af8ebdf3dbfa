"""Heatmaps of attention weights: the student's and the reference's grids, cells worked out once per
distinct grid."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from grader.i18n import Catalog
from grader.records import Heatmap

HEATMAP_DIFF = 0.01  # a heatmap cell further than this from the reference is outlined


@dataclass(frozen=True)
class GridCell:
    row: int
    col: int
    value: float
    text: str
    fill: str
    ink: str
    differs: bool


@dataclass(frozen=True)
class Grid:
    """One heatmap's cells; immutable and hashable, so that its drawing can be reused."""

    label: str
    cells: tuple[GridCell, ...]


@dataclass
class HeatmapView:
    test_id: str
    title: str
    tokens: list[str]
    student: Grid | None
    reference: Grid
    differing: int


# Colours of the heatmap scale: white to the dark blue of the report's accent.
_LOW = (247, 251, 255)
_HIGH = (8, 48, 107)


def _fill(t: float) -> tuple[str, str]:
    t = min(1.0, max(0.0, t))
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(_LOW, _HIGH))
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("#ffffff" if t > 0.5 else "#1b1f24")


def _grid(label: str, values: list[list[float]], low: float, high: float, other: list[list[float]] | None) -> Grid:
    rows = tuple(tuple(row) for row in values)
    return _grid_of_rows(label, rows, low, high, tuple(tuple(row) for row in other) if other is not None else None)


@lru_cache(maxsize=1024)
def _grid_of_rows(
    label: str,
    values: tuple[tuple[float, ...], ...],
    low: float,
    high: float,
    other: tuple[tuple[float, ...], ...] | None,
) -> Grid:
    """A heatmap's cells, worked out once per distinct grid (see _attention_grid)."""
    cells = []
    span = (high - low) or 1.0
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            finite = isinstance(value, (int, float)) and math.isfinite(value)
            fill, ink = _fill((value - low) / span) if finite else ("#f4d03f", "#1b1f24")
            differs = other is not None and (not finite or abs(value - other[i][j]) > HEATMAP_DIFF)
            cells.append(GridCell(i, j, value, f"{value:.2f}" if finite else str(value), fill, ink, differs))
    return Grid(label, tuple(cells))


def heatmap_view(heatmap: Heatmap, catalog: Catalog) -> HeatmapView:
    expected = heatmap.expected
    actual = heatmap.actual
    values = [v for row in expected for v in row if math.isfinite(v)]
    if actual is not None:
        values += [v for row in actual for v in row if math.isfinite(v)]
    low, high = min([0.0, *values]), max([1e-9, *values])  # an empty or all-NaN grid: the scale 0 to 1e-9
    title = catalog.t(heatmap.title_key) if catalog.has(heatmap.title_key) else heatmap.test_id
    reference = _grid(catalog.t("report.heatmap.reference"), expected, low, high, None)
    student = _grid(catalog.t("report.heatmap.yours"), actual, low, high, expected) if actual is not None else None
    differing = sum(c.differs for c in student.cells) if student else 0
    return HeatmapView(heatmap.test_id, title, list(heatmap.tokens), student, reference, differing)
