"""What a failing check's report says about its diagnosis: the student's line with its code, the
checkpoint of the pipeline it missed, the likely causes, and the hint that belongs to the cause.

Text comes from the catalogues (templates/i18n/*/diagnosis.toml, misconceptions.*); the partials
templates/_diagnosis.html.j2 and _diagnosis.md.j2 lay it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.i18n import Catalog
from grader.records import StudentFrame, TestOutcome
from grader.report.messages import location_params
from grader.report.sentences import Said, inline, say


@dataclass
class CauseView:
    id: str
    title: str


@dataclass
class DiagnosisView:
    causes: list[CauseView]
    checkpoint: str  # the step of the pipeline that differs first, in the student's language ("" if unknown)
    location: StudentFrame | None  # the student's line, with its code
    where: Said | str  # "sec3_5_causal_attention.py, line 49, in forward:" (a notebook's cell and line)
    code: str  # the student's line of code there, one line, escaped
    causes_label: str  # "Likely cause:" or "Two mistakes:"


def diagnosis_view(outcome: TestOutcome, catalog: Catalog) -> DiagnosisView | None:
    diagnosis = outcome.diagnosis
    if outcome.status == "passed" or diagnosis is None:
        return None
    causes = []
    for misconception in diagnosis.misconceptions:
        key = f"misconceptions.{misconception}.title"
        causes.append(
            CauseView(
                misconception,
                catalog.t(key) if catalog.has(key) else catalog.t("report.card.unknown-title", id=misconception),
            )
        )
    checkpoint_key = f"diagnosis.checkpoints.{diagnosis.checkpoint}"
    checkpoint = catalog.t(checkpoint_key) if diagnosis.checkpoint and catalog.has(checkpoint_key) else ""
    location = diagnosis.location
    if location is not None and _shown_by_error(outcome, location):
        location = None  # the error's own message shows this line already
    where = say(catalog, "report.where", **location_params(location, catalog)) if location is not None else ""
    code = inline(str(location.code).strip(), limit=300) if location is not None else ""
    if not causes and not checkpoint and location is None:
        return None
    label = catalog.t("diagnosis.causes-one" if len(causes) == 1 else "diagnosis.causes-many", count=len(causes))
    return DiagnosisView(causes, checkpoint, location, where, code, label)


def _shown_by_error(outcome: TestOutcome, location: StudentFrame) -> bool:
    error = outcome.error
    return (
        error is not None
        and error.location is not None
        and (error.location.file, error.location.line, error.location.cell)
        == (location.file, location.line, location.cell)
    )


def outcome_hint(outcome: TestOutcome, catalog: Catalog) -> str:
    """The hint a failing check shows: its cause's when the diagnosis names one, else its
    checkpoint's, else the check's own (a check's hint is about what it tests, which is not
    always what went wrong: a mask bug also fails the check of qkv_bias). A check whose run
    stopped at the exercise's contract (a missing attribute, a wrong type or shape) shows no hint
    of its own: its message says what the contract asks, and what the check would test next (say,
    gradients) is not what went wrong."""
    if outcome.status == "passed":
        return ""
    diagnosis = outcome.diagnosis
    causes = (
        diagnosis.misconceptions if diagnosis is not None else (outcome.misconception,) if outcome.misconception else ()
    )
    for misconception in causes:
        key = f"misconceptions.{misconception}.hint"
        if catalog.has(key):
            return catalog.t(key)
    if diagnosis is not None:
        key = f"diagnosis.hints.{diagnosis.checkpoint}"
        if diagnosis.checkpoint and catalog.has(key):
            return catalog.t(key)
    if outcome.error is not None and outcome.error.kind == "contract":
        return ""
    key = f"tests.{outcome.id}.hint"
    return catalog.t(key) if catalog.has(key) else ""


def diagnosis_record(outcome: TestOutcome) -> dict | None:
    """The diagnosis in results.json: every cause named, the checkpoint and the student's line."""
    diagnosis = outcome.diagnosis
    if diagnosis is None:
        return None
    location = diagnosis.location
    return {
        "misconceptions": list(diagnosis.misconceptions),
        "checkpoint": diagnosis.checkpoint,
        "file": location.file if location else None,
        "line": location.line if location else None,
        "cell": location.cell if location and location.cell else None,
        "evidence": diagnosis.evidence,
    }
