"""The views of a class for its TA: one row per student (scores, what to act on), then the score
histogram, which students each misconception was diagnosed in, and each check's pass rate."""

from __future__ import annotations

import base64
import functools
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote

from markupsafe import Markup

from grader.fingerprint import version
from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.intake.printable import printable
from grader.records import SECTIONS, GradeResult, IntegrityNote
from grader.report.messages import NoteView, check_title, misconception_card, note_view
from grader.report.results_file import DISTRIBUTION
from grader.report.sentences import Said, trusted
from grader.report.student_status import Status, student_status

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
    status: list[Status] = field(default_factory=list)  # what to act on, most urgent first

    @property
    def href(self) -> str:
        """The student's feedback page, relative to the summary ("" when there is no folder)."""
        return f"{quote(self.folder, errors='surrogateescape')}/feedback.html" if self.folder else ""

    @property
    def status_kinds(self) -> set[str]:
        """The notes the status column says already (the notebook not recognised, uploaded again)."""
        return {kind for status in self.status for kind in status.notes}

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 0.0


@dataclass
class PassRate:
    section: str
    title: str
    rate: float


@dataclass
class Diagnosed:
    """One misconception and the students (their rows) it was diagnosed in."""

    title: str
    rows: list[StudentRow]


@dataclass(frozen=True)
class PinnedScript:
    """The summary's one script (templates/sort_table.js) and its digest for the page's CSP."""

    text: Markup
    digest: str


@functools.cache
def sort_script() -> PinnedScript:
    text = (TEMPLATES_DIR / "sort_table.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return PinnedScript(Markup(text), f"sha256-{digest}")


@dataclass
class ClassView:
    title: str  # names the assignment
    version: Said  # the kit's
    rows: list[StudentRow]
    section_ids: list[str]
    section_titles: dict[str, str]
    histogram: Chart
    pass_rates: list[PassRate]
    misconceptions: list[Diagnosed]
    mean: float
    median: float
    flagged: int
    protections: list[NoteView] = field(default_factory=list)  # missing on the whole run
    script: PinnedScript = field(default_factory=sort_script)


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


def pass_rates(results: list[GradeResult], catalog: Catalog) -> list[PassRate]:
    passed: Counter[str] = Counter()
    seen: dict[str, str] = {}  # test id -> its section, in book order
    for result in results:
        for outcome in result.tests:
            seen.setdefault(outcome.id, outcome.section)
            passed[outcome.id] += outcome.status == "passed"
    return [
        PassRate(section, check_title(test_id, catalog), passed[test_id] / len(results))
        for test_id, section in seen.items()
    ]


def diagnosed(rows: list[StudentRow]) -> list[Diagnosed]:
    """Each misconception with the students it was diagnosed in, the most frequent first."""
    students: dict[str, list[StudentRow]] = {}
    for row in rows:
        for title in row.misconceptions:
            students.setdefault(title, []).append(row)
    ordered = sorted(students.items(), key=lambda item: (-len(item[1]), item[0]))
    return [Diagnosed(title, rows) for title, rows in ordered]


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
                student_status(result, catalog),
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
        catalog.t("summary.page-title", assignment=catalog.t("summary.assignment")),
        trusted(version(DISTRIBUTION)),
        rows,
        section_ids,
        {s: catalog.t(section_key(s)) for s in section_ids},
        histogram(fractions, catalog),
        pass_rates(results, catalog),
        diagnosed(rows),
        mean,
        median,
        sum(1 for row in rows if any(not n.kind.startswith("sandbox.") for n in row.integrity)),
        protections,
    )
