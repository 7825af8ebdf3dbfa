"""A module that fails to import, said once: one box at the top of its section with the line Python
stopped at (a caret under the place, when it is known), Python's own message and a gloss of it in
plain words (templates/i18n/*/python_errors.toml). Its checks, and the checks of other modules
that need it, are listed as not run because of it, one short line each."""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, TestOutcome
from grader.report.messages import error_output, location_params, module_name
from grader.report.next_step import fails_to_import
from grader.report.sentences import Said, inline, say, student, words

# (exception types, start of Python's message, gloss key), the first match wins
GLOSSES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = tuple(
    (types, re.compile(pattern), key)
    for types, pattern, key in (
        (("SyntaxError",), r"expected ':'", "expected-colon"),
        (("SyntaxError",), r"invalid syntax\. Perhaps you forgot a comma", "forgot-comma"),
        (("SyntaxError",), r"'.' was never closed", "never-closed"),
        (("SyntaxError",), r"unmatched '.'|closing parenthesis '.' does not match", "unmatched"),
        (("SyntaxError",), r"unterminated (triple-quoted )?string literal|EOL while scanning", "unterminated-string"),
        (("SyntaxError",), r"'(return|yield)' outside function", "outside-function"),
        (("SyntaxError",), r"unexpected EOF", "eof"),
        (("IndentationError",), r"unexpected indent", "unexpected-indent"),
        (("IndentationError",), r"expected an indented block", "expected-indent"),
        (("IndentationError",), r"unindent does not match", "unindent"),
        (("TabError", "IndentationError"), r"inconsistent use of tabs", "tabs"),
        (("SyntaxError",), r"invalid syntax", "invalid-syntax"),
        (("NameError", "UnboundLocalError"), r"(name|local variable|cannot access) ", "name-not-defined"),
        (("ImportError",), r"cannot import name", "cannot-import-name"),
        (("ModuleNotFoundError",), r"No module named", "no-module"),
        (("AttributeError",), r"", "attribute"),
    )
)
_CARET_AT_END = {"expected-colon"}  # where Python's caret stands: after the line's last character


def gloss_key(exc_type: str, message: str) -> str:
    """The catalogue key (python-errors.gloss.*) that says `exc_type: message` in plain words."""
    for types, pattern, key in GLOSSES:
        if exc_type in types and pattern.match(message):
            return key
    return "other"


@dataclass
class BrokenModuleView:
    title: Said  # "sec3_5_causal_attention does not import, so none of its checks could run"
    intro: Said  # "Python stopped reading sec3_5_causal_attention.py at line 41:"
    code: str  # that line, one line, escaped ("" when unknown)
    caret: int  # the column of the caret under `code`, or -1
    exc_type: str
    output: str  # Python's message, as the student's output
    gloss: str  # what it means, in the student's language


def broken_module_view(outcome: TestOutcome, catalog: Catalog) -> BrokenModuleView | None:
    """The box of a check whose module fails to import (`next_step.fails_to_import`), else None."""
    error = outcome.error
    if error is None or not fails_to_import(outcome):
        return None
    location = error.location
    code = inline(str(location.code).strip(), limit=300) if location is not None else ""
    key = gloss_key(error.exc_type, error.message)
    intro = say(catalog, "python-errors.intro", **location_params(location, catalog)) if location else Said([])
    return BrokenModuleView(
        say(catalog, "python-errors.title", module=module_name(outcome.module)),
        intro,
        code,
        len(code) if key in _CARET_AT_END and code else -1,
        error.exc_type,
        error_output(error),
        catalog.t(f"python-errors.gloss.{key}"),
    )


def not_run_note(outcome: TestOutcome, broken: set[str], catalog: Catalog) -> Said | None:
    """One line, complete on its own (the platforms that show one check at a time show it), for a
    check that could not run because its module, or one it needs, does not import; else None."""
    error = outcome.error
    if error is None or not (fails_to_import(outcome) or (outcome.blocked_by in broken and error.kind == "import")):
        return None
    module = outcome.blocked_by or outcome.module
    section = MODULE_SECTIONS.get(module, "")
    title = words(catalog.t(section_key(section))) if section else student(module)
    location = error.location
    if location is None:
        return say(catalog, "python-errors.not-run", module=module_name(module), section_title=title)
    return say(
        catalog,
        "python-errors.not-run-located",
        module=module_name(module),
        section_title=title,
        exc_type=student(error.exc_type),
        **location_params(location, catalog),
    )


def not_run_section_note(outcome: TestOutcome, catalog: Catalog) -> Said:
    """Said once above a section's checks that another module's failed import kept from running."""
    module = outcome.blocked_by or outcome.module
    section = MODULE_SECTIONS.get(module, "")
    title = words(catalog.t(section_key(section))) if section else student(module)
    own = words(catalog.t(section_key(outcome.section)))
    return say(catalog, "python-errors.not-run-section", own_title=own, module=module_name(module), section_title=title)
