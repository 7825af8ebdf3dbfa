"""What a TA acts on for one student, in a word or two per item: the summary's status column.

Most urgent first: the grader failed on the submission; nothing in it was recognised; a module
that does not import (with its section and line); sections not started (every check stopped at the
stub's NotImplementedError; all seven: untouched); other sections with failing checks; then what
the LMS said (late, uploaded again); or that every check passed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from grader.i18n import Catalog
from grader.records import MODULE_SECTIONS, SECTIONS, GradeResult, TestOutcome
from grader.report.messages import not_implemented

GRADER_FAILED = {"grader.failed", "grader.partial", "grader.mindspore-missing", "report.failed", "result.rejected"}
NOTHING_RECOGNISED = {
    "submission.unreadable",
    "submission.notebook-nothing-found",
    "submission.notebook-defines-nothing",
}
SYNTAX_ERRORS = {"SyntaxError", "IndentationError", "TabError"}


@dataclass(frozen=True)
class Status:
    rank: int  # 0 is the most urgent
    text: str
    kind: str  # the catalogue key's last part
    notes: frozenset[str] = frozenset()  # the kinds of the integrity notes it says already


def student_status(result: GradeResult, catalog: Catalog) -> list[Status]:
    kinds = {note.kind for note in result.integrity} | {note.kind for note in result.intake.remarks}
    statuses: list[Status] = []
    if kinds & GRADER_FAILED:
        statuses.append(_status(catalog, 0, "grader-failed"))
    if kinds & NOTHING_RECOGNISED or not result.intake.modules:
        kind = "not-recognised" if result.intake.notebooks else "no-code"
        statuses.append(dataclasses.replace(_status(catalog, 1, kind), notes=frozenset(kinds & NOTHING_RECOGNISED)))
    else:
        statuses += _import_failures(result.tests, catalog) + _not_started(result.tests, catalog)
        statuses += _failing(result.tests, catalog)
    if result.intake.identity is not None and result.intake.identity.late:
        statuses.append(_status(catalog, 5, "late"))
    if "reuploaded" in kinds:
        statuses.append(dataclasses.replace(_status(catalog, 6, "reuploaded"), notes=frozenset({"reuploaded"})))
    if result.max_score and result.score >= result.max_score:
        statuses.append(_status(catalog, 9, "complete"))
    return sorted(statuses, key=lambda status: status.rank)


def _status(catalog: Catalog, rank: int, kind: str, **params: object) -> Status:
    return Status(rank, catalog.t(f"summary.status.{kind}", **params), kind)


def _import_failures(tests: list[TestOutcome], catalog: Catalog) -> list[Status]:
    """One item per module that does not import, at the line Python names."""
    broken: dict[str, Status] = {}
    for outcome in tests:
        error = outcome.error
        module = error.module if error is not None and error.module in MODULE_SECTIONS else outcome.module
        if error is None or error.kind != "import" or module in broken:
            continue
        line = error.location.line if error.location is not None else 0
        kind = "syntax-error" if error.exc_type in SYNTAX_ERRORS else "import-error"
        broken[module] = _status(catalog, 2, kind, section=MODULE_SECTIONS[module], line=line, error=error.exc_type)
    return list(broken.values())


def _not_started(tests: list[TestOutcome], catalog: Catalog) -> list[Status]:
    stubs = [
        section
        for section in SECTIONS
        if (mine := [outcome for outcome in tests if outcome.section == section])
        and all(outcome.error is not None and not_implemented(outcome.error) for outcome in mine)
    ]
    if not stubs:
        return []
    if len(stubs) == len(SECTIONS):
        return [_status(catalog, 3, "untouched")]
    return [_status(catalog, 3, "not-started", sections=", ".join(stubs))]


def _failing(tests: list[TestOutcome], catalog: Catalog) -> list[Status]:
    """The sections with a failing check that neither an import failure nor a stub explains."""
    sections = [
        section
        for section in SECTIONS
        if any(outcome.section == section and not _explained(outcome) for outcome in tests)
    ]
    return [_status(catalog, 4, "failing", sections=", ".join(sections))] if sections else []


def _explained(outcome: TestOutcome) -> bool:
    """Passed, or failed for a reason an earlier item names (the import, the stub)."""
    error = outcome.error
    return outcome.status == "passed" or error is not None and (error.kind == "import" or not_implemented(error))
