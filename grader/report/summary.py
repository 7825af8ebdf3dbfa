"""The views of a class: one row per student, score histogram, pass rates, misconceptions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote

from grader.i18n import Catalog, section_key
from grader.intake.printable import printable
from grader.records import SECTIONS, GradeResult, IntegrityNote
from grader.report.messages import NoteView, check_title, misconception_card, note_view

HISTOGRAM_BINS = 10


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
    track: str = "pytorch"
    folder: str | None = None  # the folder of the student's reports (shown beside the name when it differs)

    @property
    def href(self) -> str:
        """The student's feedback page, relative to the summary ("" when there is no folder)."""
        return f"{quote(self.folder, errors='surrogateescape')}/feedback.html" if self.folder else ""

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
    top = max(counts, default=0) or 1
    width = 100 // bins
    bars = [
        Bar(f"{i * width}–{(i + 1) * width}" if i < bins - 1 else f"{i * width}–100", c, c / top, str(c))
        for i, c in enumerate(counts)
    ]
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
    bars = [
        Bar(misconception_card(mid, catalog).title, n, n / top, catalog.t("summary.chart.students", count=n), mid)
        for mid, n in sorted(students.items(), key=lambda item: (-item[1], item[0]))
    ]
    return Chart(catalog.t("summary.chart.misconceptions"), bars, catalog.t("summary.chart.no-misconceptions"))


def class_view(results: list[GradeResult], catalog: Catalog) -> ClassView:
    results = sorted(results, key=lambda r: r.submission)
    section_ids = list(SECTIONS)
    rows = []
    for result in results:
        scores = {s.id: (s.score, s.max_score) for s in result.sections}
        rows.append(
            StudentRow(
                printable(result.submission),
                result.score,
                result.max_score,
                [scores.get(s, (0.0, 0.0)) for s in section_ids],
                [note_view(n, catalog) for n in result.integrity],
                [
                    misconception_card(mid, catalog).title
                    for mid in sorted({o.misconception for o in result.tests if o.misconception})
                ],
                result.track,
                result.folder,
            )
        )
    fractions = sorted(row.fraction for row in rows)
    mean = sum(fractions) / len(fractions) if fractions else 0.0
    median = (fractions[(len(fractions) - 1) // 2] + fractions[len(fractions) // 2]) / 2 if fractions else 0.0
    # Protections missing on the machine are the same for every student: show them once.
    common = set.intersection(*[{(n.kind, n.detail) for n in r.integrity} for r in results]) if results else set()
    protections = [
        note_view(IntegrityNote(kind, detail), catalog)
        for kind, detail in sorted(common)
        if kind.startswith("sandbox.")
    ]
    return ClassView(
        rows,
        section_ids,
        {s: catalog.t(section_key(s)) for s in section_ids},
        histogram(fractions, catalog),
        pass_rates(results, catalog),
        misconception_counts(results, catalog),
        mean,
        median,
        sum(1 for row in rows if any(not n.kind.startswith("sandbox.") for n in row.integrity)),
        protections,
    )


# -- rendering ---------------------------------------------------------------------------------
