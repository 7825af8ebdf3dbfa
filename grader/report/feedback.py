"""The views of one submission's report (sections, checks, tables, guidance)."""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from dataclasses import dataclass, replace
from typing import Any

from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, SECTIONS, GradeResult, StudentFrame, TestOutcome
from grader.report.diagnosis import DiagnosisView, diagnosis_view, outcome_hint
from grader.report.found import FoundView, found_view
from grader.report.heatmaps import HeatmapView, heatmap_view
from grader.report.messages import (
    Card,
    NoteView,
    check_title,
    error_message,
    error_output,
    location_params,
    misconception_card,
    module_name,
    not_implemented,
    note_view,
    outcome_message,
    with_near_miss,
)
from grader.report.next_step import first_to_fix
from grader.report.sentences import Said, inline, number, say, student, words

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
    message: Said  # the grader's sentence
    hint: str  # the test's own hint (tests."<id>".hint), shown when it did not pass
    location: StudentFrame | None
    table: Table | None
    misconception: str | None
    blocked: Said | str  # "this needs your earlier module, which is broken", or ""
    heatmap: HeatmapView | None = None
    output: str = ""  # the student's own text (an exception's message), shown as quoted output
    where: Said | None = None  # the location as a sentence ("file, line, in function:")
    code: str = ""  # the student's line of code there, one line, escaped
    diagnosis: DiagnosisView | None = None  # the student's line, the checkpoint missed, the causes

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Guidance:
    """A "start here" pointer: a catalogue key and its parameters, already rendered."""

    text: Said


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
class FeedbackView:
    result: GradeResult
    sections: list[SectionView]
    next_step: Guidance | None
    cards: list[Card]
    heatmaps: list[HeatmapView]
    integrity: list[NoteView]
    found: FoundView | None = None

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
    if isinstance(value, int):
        return number(value)
    return inline(value, limit=40)


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
    return Table(
        [[Cell(_format(v), flag(i, j)) for j, v in enumerate(row)] for i, row in enumerate(expected)],
        [[Cell(_format(v), flag(i, j)) for j, v in enumerate(row)] for i, row in enumerate(actual)],
        truncated,
    )


def _check_view(outcome: TestOutcome, catalog: Catalog, heatmap: HeatmapView | None = None) -> CheckView:
    message: Said = outcome.message if isinstance(outcome.message, Said) else words(str(outcome.message or ""))
    blocked: Said | str = ""
    if outcome.blocked_by:
        section = MODULE_SECTIONS.get(outcome.blocked_by, "")
        blocked = say(
            catalog,
            "report.blocked-note",
            module=module_name(outcome.blocked_by),
            section_title=words(catalog.t(section_key(section))) if section else student(outcome.blocked_by),
        )
    if outcome.error is not None:
        message = with_near_miss(error_message(outcome.error, catalog), outcome, catalog)  # the blocked note apart
    elif outcome.detail is not None:
        message = outcome_message(outcome, catalog)
    hint = outcome_hint(outcome, catalog)
    location = outcome.error.location if outcome.error is not None else None
    where = None
    code = ""
    if location is not None:
        where = say(catalog, "report.where", **location_params(location, catalog))
        code = inline(str(location.code).strip(), limit=300)
    return CheckView(
        outcome.id,
        check_title(outcome.id, catalog),
        outcome.status,
        outcome.points,
        outcome.max_points,
        message,
        hint,
        location,
        _table(outcome),
        outcome.misconception,
        blocked,
        heatmap,
        error_output(outcome.error),
        where,
        code,
        diagnosis_view(outcome, catalog),
    )


def _missing(outcome: TestOutcome) -> bool:
    return outcome.error is not None and outcome.error.key in ("import.missing", "import.missing-notebook")


def _graders_own(outcome: TestOutcome) -> bool:
    """A check the grader itself could not run: it says nothing about the student's code."""
    return outcome.error is not None and outcome.error.kind == "internal"


def _start(tests: list[TestOutcome], catalog: Catalog) -> Guidance | None:
    """When nothing in a section works: which file and function to write (or fix) first."""
    tests = [t for t in tests if not _graders_own(t)]
    if not tests or any(t.status in ("passed", "failed") for t in tests):
        return None
    for test in tests:
        error = test.error
        if error is None:
            continue
        missing = (error.params or {}).get("module", test.module)
        if error.key in ("import.missing", "import.missing-notebook") and missing == test.module:
            key = "report.start.missing" + error.key.removeprefix("import.missing")  # its own code first
            return Guidance(say(catalog, key, module=module_name(missing)))
        if test.blocked_by:
            section = MODULE_SECTIONS.get(test.blocked_by, "")
            title = words(catalog.t(section_key(section))) if section else student(test.blocked_by)
            return Guidance(
                say(catalog, "report.start.blocked", module=module_name(test.blocked_by), section_title=title)
            )
        if error.key in ("import.missing", "import.missing-notebook"):
            key = "report.start.missing" + error.key.removeprefix("import.missing")
            return Guidance(say(catalog, key, module=module_name(missing)))
        location = error.location
        if location is None:
            continue
        params = location_params(location, catalog)
        if not_implemented(error):
            return Guidance(say(catalog, "report.start.not-implemented", **params))
        return Guidance(say(catalog, "report.start.error", **params))
    return Guidance(say(catalog, "report.start.generic", module=module_name(tests[0].module)))


def _next_step(
    sections: list[SectionView], catalog: Catalog, skip: Container[str] = frozenset(), tests: Sequence[TestOutcome] = ()
) -> Guidance | None:
    """The check whose fix unblocks the most points (`next_step.first_to_fix`; not one of `skip`,
    which the grader itself could not run), with its section; else the first section in book order
    that is not complete, and its first check that did not pass."""
    first = first_to_fix(list(tests), skip)
    for section in sections if first is not None else ():
        view = next((t for t in section.tests if first is not None and t.id == first.id), None)
        if view is not None:
            return Guidance(
                say(catalog, "report.next-step", section_title=words(section.title), test=words(view.title))
            )
    for section in sections:
        if not section.max_score or section.score >= section.max_score:
            continue
        failing = next((t for t in section.tests if not t.passed and t.id not in skip), None)
        if failing is None:
            continue
        return Guidance(say(catalog, "report.next-step", section_title=words(section.title), test=words(failing.title)))
    return None


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
        start = _start(tests, catalog)
        checks = [_check_view(o, catalog, by_test.get(o.id)) for o in tests]
        if start is not None:  # a missing module is said once, by the section, not by each of its checks
            checks = [
                replace(check, message=Said([])) if _missing(outcome) else check
                for check, outcome in zip(checks, tests, strict=True)
            ]
        sections.append(
            SectionView(
                section,
                catalog.t(section_key(section)),
                score.score if score else sum(o.points for o in tests),
                max_score,
                checks,
                start,
            )
        )
    seen: dict[str, list[str]] = {}
    for outcome in result.tests:
        if outcome.misconception:
            seen.setdefault(outcome.misconception, []).append(check_title(outcome.id, catalog))
    cards = [misconception_card(mid, catalog, tests) for mid, tests in seen.items()]
    skip = {o.id for o in result.tests if _graders_own(o)}
    return FeedbackView(
        result,
        sections,
        _next_step(sections, catalog, skip, result.tests),
        cards,
        heatmaps,
        [note_view(n, catalog) for n in result.integrity],
        found_view(result, catalog),
    )


# -- views of a class --------------------------------------------------------------------------
