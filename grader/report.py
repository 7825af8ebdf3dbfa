"""Rendering: results.json, feedback.html/.md per submission; gradebook.csv and summary.html per class.

Python decides what to say (message keys and parameters) and computes what the pictures show
(small view dataclasses below); the catalogues say it and the templates lay it out.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.records import (MODULE_SECTIONS, SECTIONS, GradeResult, Heatmap, IntegrityNote, ProbeError,
                            StudentFrame, TestOutcome)

HEATMAP_DIFF = 0.01  # a heatmap cell further than this from the reference is outlined
HISTOGRAM_BINS = 10


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _not_implemented(error: ProbeError) -> bool:
    return error.kind == "exception" and error.exc_type == "NotImplementedError" and error.location is not None


def blocked_by_message(module: str, catalog: Catalog) -> str:
    section = MODULE_SECTIONS.get(module, "")
    return catalog.t("error.blocked-by", module=module, section=section, section_title=catalog.t(section_key(section)))


def error_message(error: ProbeError, catalog: Catalog, blocked_by: str | None = None) -> str:
    """What went wrong in the student's code, in the student's terms."""
    params: dict[str, Any] = dict(error.params)
    params.setdefault("module", error.module)
    location = error.location
    if location:
        params |= {"file": location.file, "line": location.line, "code": location.code.strip(),
                   "function": location.function}
    params |= {"exc_type": error.exc_type, "exc_message": error.message}
    parts = []
    if blocked_by:
        parts.append(blocked_by_message(blocked_by, catalog))
    if error.key:
        parts.append(catalog.t(error.key, **params))
    elif _not_implemented(error):
        parts.append(catalog.t("error.not-implemented", **params))
    elif location:
        parts.append(catalog.t(f"error.{error.kind}.located", **params))
    else:
        parts.append(catalog.t(f"error.{error.kind}.unlocated", **params))
    return " ".join(part for part in parts if part)


def outcome_message(outcome: TestOutcome, catalog: Catalog) -> str:
    if outcome.status == "passed":
        return ""
    if outcome.error is not None:
        return error_message(outcome.error, catalog, outcome.blocked_by)
    if outcome.detail is not None:
        params = dict(outcome.detail.params)
        for name in ("what", "on"):
            if params.get(name):
                params[name] = catalog.t(params[name])
        message = catalog.t(outcome.detail.key, **params)
        return f"{blocked_by_message(outcome.blocked_by, catalog)} {message}" if outcome.blocked_by else message
    return catalog.t(f"status.{outcome.status}")


def results_document(result: GradeResult, catalog: Catalog) -> dict:
    return {
        "submission": result.submission,
        "score": result.score,
        "max_score": result.max_score,
        "sections": [asdict(section) for section in result.sections],
        "tests": [
            {"id": o.id, "section": o.section, "points": o.points, "max_points": o.max_points,
             "status": o.status, "message": o.message, "misconception": o.misconception,
             "blocked_by": o.blocked_by}
            for o in result.tests
        ],
        "integrity": [asdict(note) for note in result.integrity],
        "content_hash": result.content_hash,
        "lang": catalog.lang,
    }


# -- views of one submission -------------------------------------------------------------------


@dataclass
class Cell:
    text: str
    differs: bool = False


@dataclass
class Table:
    """Expected and actual values side by side, differing entries marked."""

    expected: list[list[Cell]]
    actual: list[list[Cell]]
    truncated: bool = False  # the test compared more entries than shown


@dataclass
class CheckView:
    id: str
    title: str
    status: str
    points: float
    max_points: float
    message: str
    hint: str  # the test's own hint (tests."<id>".hint), shown when it did not pass
    location: StudentFrame | None
    table: Table | None
    misconception: str | None
    blocked: str  # "this needs your earlier module, which is broken", or ""
    heatmap: "HeatmapView | None" = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Guidance:
    """A "start here" pointer: a catalogue key and its parameters, already rendered."""

    text: str


@dataclass
class SectionView:
    id: str
    title: str
    score: float
    max_score: float
    tests: list[CheckView]
    start: Guidance | None  # set when nothing in the section works yet

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 0.0

    @property
    def state(self) -> str:
        if self.max_score and self.score >= self.max_score:
            return "full"
        return "none" if self.score == 0 else "part"


@dataclass
class Card:
    """A misconception explained: what, why, a hint and where to reread."""

    id: str
    title: str
    explanation: str
    hint: str
    reread: str
    tests: list[str]


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


@dataclass
class NoteView:
    kind: str
    text: str


@dataclass
class FeedbackView:
    result: GradeResult
    sections: list[SectionView]
    next_step: Guidance | None
    cards: list[Card]
    heatmaps: list[HeatmapView]
    integrity: list[NoteView]

    @property
    def fraction(self) -> float:
        return self.result.score / self.result.max_score if self.result.max_score else 0.0

    @property
    def heatmaps_to_study(self) -> list[HeatmapView]:
        """Heatmaps where the student's weights differ from the reference (or are missing)."""
        return [h for h in self.heatmaps if h.student is None or h.differing]


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4f}"
    return str(value)


def _matrix(value: Any) -> list[list[Any]]:
    if isinstance(value, (list, tuple)) and value and all(isinstance(row, (list, tuple)) for row in value):
        return [list(row) for row in value]
    if isinstance(value, (list, tuple)):
        return [list(value)]
    return [[value]]


def _table(outcome: TestOutcome) -> Table | None:
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
    shown = sum(len(row) for row in expected)
    truncated = isinstance(shape, (list, tuple)) and math.prod(int(s) for s in shape) > shown
    return Table([[Cell(_format(v), flag(i, j)) for j, v in enumerate(row)] for i, row in enumerate(expected)],
                 [[Cell(_format(v), flag(i, j)) for j, v in enumerate(row)] for i, row in enumerate(actual)],
                 truncated)


def check_title(test_id: str, catalog: Catalog) -> str:
    key = f"tests.{test_id}.title"
    return catalog.t(key) if catalog.has(key) else test_id


def _check_view(outcome: TestOutcome, catalog: Catalog, heatmap: "HeatmapView | None" = None) -> CheckView:
    message = outcome.message
    blocked = ""
    if outcome.blocked_by:
        section = MODULE_SECTIONS.get(outcome.blocked_by, "")
        blocked = catalog.t("report.blocked-note", module=outcome.blocked_by,
                            section_title=catalog.t(section_key(section)) if section else outcome.blocked_by)
    if outcome.error is not None:
        message = error_message(outcome.error, catalog)  # the blocked note is shown on its own
    elif outcome.detail is not None:
        message = outcome_message(outcome, catalog)
    hint_key = f"tests.{outcome.id}.hint"
    hint = catalog.t(hint_key) if outcome.status != "passed" and catalog.has(hint_key) else ""
    location = outcome.error.location if outcome.error is not None else None
    return CheckView(outcome.id, check_title(outcome.id, catalog), outcome.status, outcome.points,
                    outcome.max_points, message, hint, location, _table(outcome), outcome.misconception,
                    blocked, heatmap)


def _start(tests: list[TestOutcome], catalog: Catalog) -> Guidance | None:
    """When nothing in a section works: which file and function to write (or fix) first."""
    if not tests or any(t.status in ("passed", "failed") for t in tests):
        return None
    for test in tests:
        error = test.error
        if error is None:
            continue
        if test.blocked_by:
            section = MODULE_SECTIONS.get(test.blocked_by, "")
            return Guidance(catalog.t("report.start.blocked", module=test.blocked_by,
                                      section_title=catalog.t(section_key(section))))
        if error.key == "import.missing":
            return Guidance(catalog.t("report.start.missing", module=error.params.get("module", test.module)))
        location = error.location
        if location is None:
            continue
        params = {"file": location.file, "line": location.line, "function": location.function}
        if _not_implemented(error):
            return Guidance(catalog.t("report.start.not-implemented", **params))
        return Guidance(catalog.t("report.start.error", **params))
    return Guidance(catalog.t("report.start.generic", module=tests[0].module))


def _next_step(sections: list[SectionView], catalog: Catalog) -> Guidance | None:
    """The first section in book order that is not complete, and its first check that did not pass."""
    for section in sections:
        if not section.max_score or section.score >= section.max_score:
            continue
        first = next((t for t in section.tests if not t.passed), None)
        if first is None:
            continue
        return Guidance(catalog.t("report.next-step", section_title=section.title, test=first.title))
    return None


def misconception_card(mid: str, catalog: Catalog, tests: list[str] | None = None) -> Card:
    from grader.diagnosis.catalogue import CATALOGUE

    base = f"misconceptions.{mid}"
    known = catalog.has(f"{base}.title")
    title = catalog.t(f"{base}.title") if known else catalog.t("report.card.unknown-title", id=mid)
    explanation = catalog.t(f"{base}.explanation") if catalog.has(f"{base}.explanation") else ""
    hint = catalog.t(f"{base}.hint") if catalog.has(f"{base}.hint") else ""
    entry = CATALOGUE.get(mid)
    reread = catalog.t("report.card.reread", section=entry.book_section) if entry else ""
    return Card(mid, title, explanation, hint, reread, tests or [])


# Colours of the heatmap scale: white to the dark blue of the report's accent.
_LOW = (247, 251, 255)
_HIGH = (8, 48, 107)


def _fill(t: float) -> tuple[str, str]:
    t = min(1.0, max(0.0, t))
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(_LOW, _HIGH))
    return "#%02x%02x%02x" % rgb, ("#ffffff" if t > 0.5 else "#1b1f24")


def _grid(label: str, values: list[list[float]], low: float, high: float,
          other: list[list[float]] | None) -> Grid:
    rows = tuple(tuple(row) for row in values)
    return _grid_of_rows(label, rows, low, high, tuple(tuple(row) for row in other) if other is not None else None)


@lru_cache(maxsize=1024)
def _grid_of_rows(label: str, values: tuple[tuple[float, ...], ...], low: float, high: float,
                  other: tuple[tuple[float, ...], ...] | None) -> Grid:
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
    values = [v for row in expected for v in row]
    if actual is not None:
        values += [v for row in actual for v in row if math.isfinite(v)]
    low, high = min(0.0, min(values)), max(1e-9, max(values))
    title = catalog.t(heatmap.title_key) if catalog.has(heatmap.title_key) else heatmap.test_id
    reference = _grid(catalog.t("report.heatmap.reference"), expected, low, high, None)
    student = _grid(catalog.t("report.heatmap.yours"), actual, low, high, expected) if actual is not None else None
    differing = sum(c.differs for c in student.cells) if student else 0
    return HeatmapView(heatmap.test_id, title, list(heatmap.tokens), student, reference, differing)


def _note(note: IntegrityNote, catalog: Catalog) -> NoteView:
    key = f"integrity.{note.kind}"
    text = catalog.t(key, detail=note.detail) if catalog.has(key) else catalog.t("integrity.other", kind=note.kind)
    return NoteView(note.kind, text)


def feedback_view(result: GradeResult, catalog: Catalog) -> FeedbackView:
    titles = {s.id: s for s in result.sections}
    heatmaps = [heatmap_view(h, catalog) for h in result.heatmaps]
    by_test = {h.test_id: h for h in heatmaps}
    sections = []
    for section in SECTIONS:
        tests = [o for o in result.tests if o.section == section]
        score = titles.get(section)
        max_score = score.max_score if score else sum(o.max_points for o in tests)
        if not tests and not max_score:
            continue
        sections.append(SectionView(section, catalog.t(section_key(section)),
                                    score.score if score else sum(o.points for o in tests), max_score,
                                    [_check_view(o, catalog, by_test.get(o.id)) for o in tests],
                                    _start(tests, catalog)))
    seen: dict[str, list[str]] = {}
    for outcome in result.tests:
        if outcome.misconception:
            seen.setdefault(outcome.misconception, []).append(check_title(outcome.id, catalog))
    cards = [misconception_card(mid, catalog, tests) for mid, tests in seen.items()]
    return FeedbackView(result, sections, _next_step(sections, catalog), cards, heatmaps,
                        [_note(n, catalog) for n in result.integrity])


# -- views of a class --------------------------------------------------------------------------


@dataclass
class Bar:
    label: str
    value: float
    fraction: float  # of the chart's full length, 0..1
    text: str
    title: str = ""  # a tooltip / longer description


@dataclass
class Chart:
    title: str
    bars: list[Bar]
    empty: str = ""  # shown when there are no bars


@dataclass
class StudentRow:
    name: str
    score: float
    max_score: float
    sections: list[tuple[float, float]]  # (score, max) per section id, in section order
    integrity: list[NoteView]
    misconceptions: list[str]  # titles

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 0.0


@dataclass
class ClassView:
    rows: list[StudentRow]
    section_ids: list[str]
    section_titles: dict[str, str]
    histogram: Chart
    pass_rates: Chart
    misconceptions: Chart
    mean: float
    median: float
    flagged: int
    protections: list[NoteView] = field(default_factory=list)  # missing on the whole run


def histogram(fractions: list[float], catalog: Catalog, bins: int = HISTOGRAM_BINS) -> Chart:
    counts = [0] * bins
    for f in fractions:
        counts[min(bins - 1, max(0, int(f * bins)))] += 1
    top = max(counts) if counts and max(counts) else 1
    width = 100 // bins
    bars = [Bar(f"{i * width}–{(i + 1) * width}" if i < bins - 1 else f"{i * width}–100", c, c / top, str(c))
            for i, c in enumerate(counts)]
    return Chart(catalog.t("summary.chart.histogram"), bars)


def pass_rates(results: list[GradeResult], catalog: Catalog) -> Chart:
    passed: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for result in results:
        for outcome in result.tests:
            seen[outcome.id] += 1
            passed[outcome.id] += outcome.status == "passed"
    bars = []
    for test_id in seen:
        rate = passed[test_id] / seen[test_id]
        bars.append(Bar(check_title(test_id, catalog), rate, rate, f"{rate:.0%}", test_id))
    return Chart(catalog.t("summary.chart.pass-rates"), bars, catalog.t("summary.chart.no-tests"))


def misconception_counts(results: list[GradeResult], catalog: Catalog) -> Chart:
    students: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for result in results:
        ids = [o.misconception for o in result.tests if o.misconception]
        tests.update(ids)
        students.update(set(ids))
    top = max(students.values()) if students else 1
    bars = [Bar(misconception_card(mid, catalog).title, n, n / top,
                catalog.t("summary.chart.students", count=n), mid)
            for mid, n in sorted(students.items(), key=lambda item: (-item[1], item[0]))]
    return Chart(catalog.t("summary.chart.misconceptions"), bars, catalog.t("summary.chart.no-misconceptions"))


def class_view(results: list[GradeResult], catalog: Catalog) -> ClassView:
    results = sorted(results, key=lambda r: r.submission)
    section_ids = list(SECTIONS)
    rows = []
    for result in results:
        scores = {s.id: (s.score, s.max_score) for s in result.sections}
        rows.append(StudentRow(result.submission, result.score, result.max_score,
                               [scores.get(s, (0.0, 0.0)) for s in section_ids],
                               [_note(n, catalog) for n in result.integrity],
                               [misconception_card(mid, catalog).title for mid in
                                sorted({o.misconception for o in result.tests if o.misconception})]))
    fractions = sorted(row.fraction for row in rows)
    mean = sum(fractions) / len(fractions) if fractions else 0.0
    median = (fractions[(len(fractions) - 1) // 2] + fractions[len(fractions) // 2]) / 2 if fractions else 0.0
    # Protections missing on the machine are the same for every student: show them once.
    common = set.intersection(*[{(n.kind, n.detail) for n in r.integrity} for r in results]) if results else set()
    protections = [_note(IntegrityNote(kind, detail), catalog) for kind, detail in sorted(common)
                   if kind.startswith("sandbox.")]
    return ClassView(rows, section_ids, {s: catalog.t(section_key(s)) for s in section_ids},
                     histogram(fractions, catalog), pass_rates(results, catalog),
                     misconception_counts(results, catalog), mean, median,
                     sum(1 for row in rows if any(not n.kind.startswith("sandbox.") for n in row.integrity)),
                     protections)


# -- rendering ---------------------------------------------------------------------------------


def _fit(text: Any, width: float, font: float = 11.0) -> str:
    """`text` cut (with an ellipsis) to about `width` pixels of SVG text: wide (CJK) characters count double."""
    text = str(text)

    def size(char: str) -> float:
        return font * (1.0 if unicodedata.east_asian_width(char) in "WF" else 0.56)

    if sum(size(c) for c in text) <= width:
        return text
    used, out = size("…"), []
    for char in text:
        used += size(char)
        if used > width:
            break
        out.append(char)
    return "".join(out).rstrip() + "…"


def _num(value: float) -> str:
    return f"{value:g}"


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def environment(catalog: Catalog) -> jinja2.Environment:
    """The jinja2 environment of the catalogue's language, built (and its templates compiled) once."""
    return _environment(catalog.lang)


@lru_cache(maxsize=None)
def _environment(lang: str) -> jinja2.Environment:
    catalog = Catalog(lang)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # compiled once per run: no stat() of every template at every page
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["t"] = catalog.t
    env.globals["lang"] = catalog.lang
    env.globals["sections"] = MODULE_SECTIONS
    env.globals["attention_grid"] = lambda grid, tokens, query, key: _attention_grid(lang, grid, tuple(tokens),
                                                                                    query, key)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    env.filters["md"] = _markdown_escape
    env.filters["fit"] = _fit
    return env


@lru_cache(maxsize=1024)
def _attention_grid(lang: str, grid: Grid, tokens: tuple[str, ...], query_label: str, key_label: str) -> Markup:
    """A heatmap drawn by the attention_grid macro of templates/_svg.html.j2, once per distinct grid.

    Drawing a grid is most of a feedback page's rendering time, and grids repeat: every student's
    page shows the same reference grids, and correct submissions draw identical ones of their own.
    """
    macro = _environment(lang).get_template("_svg.html.j2").module.attention_grid
    return Markup(macro(grid, list(tokens), query_label, key_label))


def _markdown_escape(text: Any) -> str:
    """Text safe inside a Markdown paragraph or table cell."""
    text = str(text).replace("\\", "\\\\")
    for char in "|*_`<>[]":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def render_feedback(result: GradeResult, catalog: Catalog) -> tuple[str, str]:
    """feedback.html and feedback.md for one submission."""
    env = environment(catalog)
    context = {"view": feedback_view(result, catalog)}
    return (env.get_template("feedback.html.j2").render(context),
            env.get_template("feedback.md.j2").render(context))


def render_summary(results: list[GradeResult], catalog: Catalog) -> str:
    env = environment(catalog)
    return env.get_template("summary.html.j2").render({"view": class_view(results, catalog)})


def write_submission_reports(result: GradeResult, out_dir: Path, catalog: Catalog) -> None:
    html, markdown = render_feedback(result, catalog)
    write_atomic(out_dir / "feedback.html", html)
    write_atomic(out_dir / "feedback.md", markdown)
    # results.json last: its presence with a matching content hash means the folder is complete.
    write_atomic(out_dir / "results.json", json.dumps(results_document(result, catalog), indent=2, ensure_ascii=False))


def write_class_reports(results: list[GradeResult], out_dir: Path, catalog: Catalog) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    section_ids = list(SECTIONS)
    writer.writerow(["student", *section_ids, "total", "max_total", "integrity"])
    for result in sorted(results, key=lambda r: r.submission):
        scores = {s.id: s.score for s in result.sections}
        writer.writerow([result.submission, *[_num(scores.get(s, 0.0)) for s in section_ids],
                         _num(result.score), _num(result.max_score),
                         "; ".join(f"{n.kind}: {n.detail}" for n in result.integrity)])
    write_atomic(out_dir / "gradebook.csv", buffer.getvalue())
    write_atomic(out_dir / "summary.html", render_summary(results, catalog))

