"""The views of one submission's report (sections, checks, tables, guidance)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field, replace

from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, SECTIONS, GradeResult, StudentFrame, TestOutcome
from grader.report.broken import BrokenModuleView, broken_module_view, not_run_note, not_run_section_note
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
from grader.report.next_step import fails_to_import, first_to_fix
from grader.report.once import said_once
from grader.report.sentences import Said, inline, say, student, words
from grader.report.tables import Cell, Table, value_table

__all__ = ["Cell", "CheckView", "FeedbackView", "Guidance", "SectionView", "Table", "feedback_view"]

# -- views of one submission -------------------------------------------------------------------


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
    not_run: Said | None = None  # "Not run: this module does not import": nothing else is said
    same_as: Said | None = None  # its cause is explained at an earlier check: the rest is details
    blocked_by: str = ""  # the earlier module it needs, which does not work yet
    own_line: bool = False  # with same_as: the same mistake made at another line (shown)
    hint_on_card: bool = False  # its hint is its cause's, said on the cause's card (feedback pages)
    blocked_short: Said | str = ""  # `blocked` in a few words, under a note said once per section

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
    broken: BrokenModuleView | None = None  # its module does not import: said once, at its top
    notes: list[Said] = field(default_factory=list)  # said once for several of its checks

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

    @property
    def heatmaps_drawn(self) -> list[HeatmapView]:
        """Heatmaps where the student's weights differ from the reference."""
        return [h for h in self.heatmaps if h.student is not None and h.differing]

    @property
    def heatmaps_missing(self) -> list[list[HeatmapView]]:
        """Heatmaps without the student's weights, grouped by their reference grid (said once each)."""
        groups: dict[tuple, list[HeatmapView]] = {}
        for h in self.heatmaps:
            if h.student is None:
                groups.setdefault((tuple(h.tokens), h.reference), []).append(h)
        return list(groups.values())


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
        message = outcome_message(replace(outcome, blocked_by=None), catalog)  # the blocked note apart
    hint = outcome_hint(outcome, catalog)
    location = outcome.error.location if outcome.error is not None else None
    where = None
    code = ""
    if location is not None and not (outcome.error is not None and not_implemented(outcome.error)):
        where = say(catalog, "report.where", **location_params(location, catalog))  # a stub's says it all
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
        value_table(outcome, catalog),
        outcome.misconception,
        blocked,
        heatmap,
        error_output(outcome.error),
        where,
        code,
        diagnosis_view(outcome, catalog),
        blocked_by=outcome.blocked_by or "",
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
    """Where to start (`next_step.first_to_fix`; not one of `skip`, which the grader itself could
    not run): a module that does not import, else the check, with its section."""
    first = first_to_fix(list(tests), skip)
    if first is None:
        return None
    section = next((s for s in sections if s.id == first.section), None)
    view = next((t for t in section.tests if t.id == first.id), None) if section is not None else None
    if section is None or view is None:
        return None
    location = first.error.location if first.error is not None else None
    if fails_to_import(first) and location is not None:
        return Guidance(
            say(
                catalog,
                "report.next-step-import",
                section_title=words(section.title),
                module=module_name(first.module),
                **location_params(location, catalog),
            )
        )
    return Guidance(say(catalog, "report.next-step", section_title=words(section.title), test=words(view.title)))


def feedback_view(result: GradeResult, catalog: Catalog) -> FeedbackView:
    heatmaps = [heatmap_view(h, catalog) for h in result.heatmaps]
    views = [_section_view(section, result, catalog, heatmaps) for section in SECTIONS]
    sections = [s for s in views if s is not None]
    seen: dict[str, list[str]] = {}
    for outcome in result.tests:
        if outcome.misconception:
            seen.setdefault(outcome.misconception, []).append(check_title(outcome.id, catalog))
    cards = [misconception_card(mid, catalog, tests) for mid, tests in seen.items()]
    said_once(sections, cards, catalog)
    not_run = {check.id for s in sections for check in s.tests if check.not_run}
    skip = {o.id for o in result.tests if _graders_own(o)}
    return FeedbackView(
        result,
        sections,
        _next_step(sections, catalog, skip, result.tests),
        cards,
        [h for h in heatmaps if h.test_id not in not_run],
        [note_view(n, catalog) for n in result.integrity],
        found_view(result, catalog),
    )


def _section_view(
    section: str, result: GradeResult, catalog: Catalog, heatmaps: list[HeatmapView]
) -> SectionView | None:
    titles = {s.id: s for s in result.sections}
    by_test = {h.test_id: h for h in heatmaps}
    tests = [o for o in result.tests if o.section == section]
    score = titles.get(section)
    max_score = score.max_score if score else sum(o.max_points for o in tests)
    if not tests and not max_score:
        return None
    broken_modules = {o.module for o in result.tests if fails_to_import(o)}
    broken = next((b for b in (broken_module_view(o, catalog) for o in tests) if b is not None), None)
    start = None if broken is not None else _start(tests, catalog)
    checks, notes = [], []
    for outcome in tests:
        check = _check_view(outcome, catalog, by_test.get(outcome.id))
        note = not_run_note(outcome, broken_modules, catalog)
        if note is not None and broken is None:
            said = not_run_section_note(outcome, catalog)
            notes += [said] if said not in notes else []  # once per section, above its checks
        if note is not None:  # a module that does not import is said once, by its section's box
            check = replace(check, message=Said([]), not_run=note, blocked="", hint="", output="", where=None)
            check = replace(check, table=None, heatmap=None, diagnosis=None, misconception=None)
        elif start is not None and _missing(outcome):  # a missing module: said once, by the section
            check = replace(check, message=Said([]))
        checks.append(check)
    return SectionView(
        section,
        catalog.t(section_key(section)),
        score.score if score else sum(o.points for o in tests),
        max_score,
        checks,
        None if notes else start,
        broken,
        notes,
    )


# -- views of a class --------------------------------------------------------------------------
