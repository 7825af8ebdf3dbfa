"""What the report says about a test: error and outcome messages, check titles, misconception cards,
integrity notes. Text comes from the message catalogues; this module chooses keys and parameters,
and marks which parameters are the student's text (see `grader.report.sentences`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, MODULES, IntegrityNote, ProbeError, StudentFrame, TestOutcome
from grader.report.found import near_miss_said
from grader.report.sentences import Said, output_block, say, student, trusted, words

# Namespaces of catalogue keys that an error may name. A key from anywhere else (or one the
# catalogue lacks) is never shown: the sentence of the error's kind is used instead.
ERROR_KEY_PREFIXES = (
    "contract.",
    "import.",
    "sandbox.",
    "integrity.bad-result",
    "integrity.forged-result",
    "internal.",
    "mismatch.",
)
ERROR_KINDS = {"import", "exception", "contract", "timeout", "crash", "resource", "exit", "integrity", "internal"}


def not_implemented(error: ProbeError) -> bool:
    return error.kind == "exception" and error.exc_type == "NotImplementedError" and error.location is not None


def module_name(module: Any) -> Said:
    """A module the grader knows by name as words; anything else as the student's text."""
    return trusted(module) if isinstance(module, str) and module in MODULES else student(module)


def file_name(frame: StudentFrame, catalog: Catalog) -> Said:
    """Where a frame is, as the student knows it: `sec3_5_causal_attention.py`, or a notebook's cell."""
    if frame.cell:
        return say(catalog, "report.in-cell", notebook=student(frame.file), cell=frame.cell)
    if frame.file.endswith(".py") and frame.file[:-3] in MODULES:
        return trusted(frame.file)
    return student(frame.file)


def location_params(frame: StudentFrame, catalog: Catalog) -> dict[str, Any]:
    return {
        "file": file_name(frame, catalog),
        "line": frame.line if isinstance(frame.line, int) else 0,
        "function": student(frame.function),
    }


def blocked_by_message(module: str, catalog: Catalog) -> Said:
    section = MODULE_SECTIONS.get(module, "")
    title = words(catalog.t(section_key(section))) if section else student(module)
    return say(catalog, "error.blocked-by", module=module_name(module), section=trusted(section), section_title=title)


def _key_allowed(key: str, catalog: Catalog) -> bool:
    return key.startswith(ERROR_KEY_PREFIXES) and catalog.has(key)


def error_message(error: ProbeError, catalog: Catalog, blocked_by: str | None = None) -> Said:
    """What went wrong in the student's code, in the student's terms. The exception's own message
    is not part of it: `error_output` gives it, to be shown as the student's output."""
    params: dict[str, Any] = {
        name: value for name, value in (error.params or {}).items() if isinstance(name, str) and name.isidentifier()
    }
    params = {name: value if isinstance(value, Said) else _param(value) for name, value in params.items()}
    params.setdefault("module", module_name(error.module))
    if "module" in (error.params or {}):
        params["module"] = module_name(error.params["module"])
    location = error.location
    if location:
        params |= location_params(location, catalog)
    params["exc_type"] = student(error.exc_type)
    kind = error.kind if error.kind in ERROR_KINDS else "exception"
    parts: list[Said] = []
    if blocked_by and not error.key.startswith("import.stand-in"):  # a stand-in's message says what it needs
        parts.append(blocked_by_message(blocked_by, catalog))
    if error.key and _key_allowed(error.key, catalog):
        parts.append(say(catalog, error.key, **params))
    elif not_implemented(error):
        parts.append(say(catalog, "error.not-implemented", **params))
    else:
        parts.append(say(catalog, f"error.{kind}.{'located' if location else 'unlocated'}", **params))
    return _joined(parts)


def _param(value: Any) -> Any:
    """A parameter sent with an error: numbers stay numbers; anything else is the student's."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if (
        isinstance(value, (list, tuple))
        and len(value) <= 16
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return list(value)
    return student(value)


def _joined(parts: list[Said]) -> Said:
    out: list[tuple[str, str]] = []
    for index, said in enumerate(parts):
        if index:
            out.append(("text", " "))
        out.extend(said.parts)
    return Said(out)


def error_output(error: ProbeError | None) -> str:
    """The student's own text that came with an error (its exception's message), as a block."""
    if error is None or not error.message or error.kind in ("timeout", "crash"):
        return ""
    return output_block(error.message)


def with_near_miss(message: Said, outcome: TestOutcome, catalog: Catalog) -> Said:
    """The message, and the misspelt name that explains the test's error (if the intake found one)."""
    if outcome.near_miss is None:
        return message
    return _joined([message, near_miss_said(outcome.near_miss, catalog)])


def outcome_message(outcome: TestOutcome, catalog: Catalog) -> Said:
    if outcome.status == "passed":
        return Said([])
    if outcome.error is not None:
        return with_near_miss(error_message(outcome.error, catalog, outcome.blocked_by), outcome, catalog)
    if outcome.detail is not None:
        params: dict[str, Any] = {}
        for name, value in (outcome.detail.params or {}).items():
            if not (isinstance(name, str) and name.isidentifier()):
                continue
            if name in ("what", "on") and isinstance(value, str) and catalog.has(value):
                params[name] = words(catalog.t(value))  # the suites name these by catalogue key
            elif name in ("what", "on") and not value:
                params[name] = trusted("")
            else:
                params[name] = _param(value)
        key = outcome.detail.key if catalog.has(outcome.detail.key) else "mismatch.assertion"
        message = _joined([say(catalog, key, **params), *_cases(outcome.detail.params or {}, catalog)])
        return _joined([blocked_by_message(outcome.blocked_by, catalog), message]) if outcome.blocked_by else message
    return words(catalog.t(f"status.{outcome.status}"))


def _cases(params: dict[str, Any], catalog: Catalog) -> list[Said]:
    """Which of a check's inputs fail and which pass (the suites name them by catalogue key)."""
    failing, passing = params.get("failing"), params.get("passing")
    if not isinstance(failing, list) or not isinstance(passing, list):
        return []
    named = [[catalog.t(k) for k in keys if isinstance(k, str) and catalog.has(k)] for keys in (failing, passing)]
    if not named[0] or len(named[0]) != len(failing) or len(named[1]) != len(passing):
        return []
    separator = catalog.t("mismatch.cases-separator") + " "  # "; " or "；" (then stripped)
    failing_text, passing_text = (separator.join(names).replace("； ", "；") for names in named)
    if not named[1]:
        return [say(catalog, "mismatch.cases-all-fail", failing=words(failing_text))]
    return [say(catalog, "mismatch.cases", failing=words(failing_text), passing=words(passing_text))]


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
    from grader.diagnosis.catalogue.misconceptions import CATALOGUE  # grader.diagnosis imports torch: not in grader.run

    base = f"misconceptions.{mid}"
    known = catalog.has(f"{base}.title")
    title = catalog.t(f"{base}.title") if known else say(catalog, "report.card.unknown-title", id=student(mid))
    explanation = catalog.t(f"{base}.explanation") if catalog.has(f"{base}.explanation") else ""
    hint = catalog.t(f"{base}.hint") if catalog.has(f"{base}.hint") else ""
    entry = CATALOGUE.get(mid)
    reread = catalog.t("report.card.reread", section=entry.book_section) if entry else ""
    return Card(mid, title, explanation, hint, reread, tests or [])


@dataclass
class NoteView:
    kind: str
    text: Said


def note_view(note: IntegrityNote, catalog: Catalog) -> NoteView:
    key = f"integrity.{note.kind}"
    if catalog.has(key):
        text = say(catalog, key, detail=student(note.detail))
    else:
        text = say(catalog, "integrity.other", kind=student(note.kind))
    return NoteView(note.kind, text)
