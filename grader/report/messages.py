"""What the report says about a test: error and outcome messages, check titles, misconception cards,
integrity notes. Text comes from the message catalogues; this module chooses keys and parameters."""
from __future__ import annotations

from dataclasses import dataclass

from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, IntegrityNote, ProbeError, TestOutcome
from typing import Any


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


def check_title(test_id: str, catalog: Catalog) -> str:
    key = f"tests.{test_id}.title"
    return catalog.t(key) if catalog.has(key) else test_id



@dataclass
class Card:
    """A misconception explained: what, why, a hint and where to reread."""

    id: str
    title: str
    explanation: str
    hint: str
    reread: str
    tests: list[str]



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

@dataclass
class NoteView:
    kind: str
    text: str



def _note(note: IntegrityNote, catalog: Catalog) -> NoteView:
    key = f"integrity.{note.kind}"
    text = catalog.t(key, detail=note.detail) if catalog.has(key) else catalog.t("integrity.other", kind=note.kind)
    return NoteView(note.kind, text)


