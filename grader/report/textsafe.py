"""Text that came from a submission, made safe for what the platforms read: JSON documents with a
size limit (Gradescope's and PrairieLearn's results.json) and spreadsheet cells (every CSV the kit
writes: the gradebook, the LMS exports)."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from typing import Any

from grader.intake.printable import printable

ELLIPSIS = "\n[…]"
# C0 and C1 controls except tab and newline: terminal escapes (ANSI colours that PrairieLearn would
# render), carriage returns that overwrite a line, NULs.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What starts a formula in a spreadsheet (OWASP, "CSV Injection"), with the full-width forms that
# spreadsheets with East Asian input normalise to them.
FORMULA_STARTS = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# Line breaks (Python's and Unicode's) and tabs: a cell is one line.
_BREAKS = re.compile("\r\n|[\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def clean(text: Any) -> str:
    """TEXT as a string that can be encoded as UTF-8 and shows nothing but itself: undecodable bytes
    (lone surrogates) become visible escapes, control characters become U+FFFD."""
    text = str(text)
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROLS.sub("\ufffd", text)


def clip(text: Any, limit: int) -> str:
    """`clean(text)` cut to at most LIMIT characters, the cut marked."""
    text = clean(text)
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS if limit >= len(ELLIPSIS) else text[:limit]


def json_size(document: Any) -> int:
    return len(json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8"))


def fit_json(
    document: dict,
    limit: int,
    *,
    shrink: tuple[str, ...] = ("output", "message"),
    per_test: tuple[str, ...] = ("output", "message"),
) -> dict:
    """DOCUMENT (a results.json with "tests") cut until its JSON takes at most LIMIT bytes: first the
    images, then each test's long fields, then the top-level long fields, ever shorter. Scores, names
    and the tests themselves are kept."""
    if json_size(document) <= limit:
        return document
    document = copy.deepcopy(document)
    tests = document.get("tests") or []
    document.pop("images", None)
    for test in tests:
        test.pop("images", None)
    for length in (8000, 2000, 500, 100, 0):
        if json_size(document) <= limit:
            return document
        for test in tests:
            for key in per_test:
                if isinstance(test.get(key), str):
                    test[key] = clip(test[key], length)
        for key in shrink:
            if isinstance(document.get(key), str) and json_size(document) > limit:
                document[key] = clip(document[key], max(length * 20, 2000))
    for key in shrink:
        if isinstance(document.get(key), str) and json_size(document) > limit:
            document[key] = clip(document[key], 200)
    return document


def starts_formula(text: str) -> bool:
    """The strict rule: a cell is not safe as it is when it starts with = + - @ (or a full-width
    form of one), or with anything a spreadsheet may skip before one: any whitespace (tab, CR,
    no-break and ideographic spaces...), a control, an invisible format character or a lone mark."""
    if not text:
        return False
    first = text[0]
    return (
        first in FORMULA_STARTS
        or first.isspace()
        or unicodedata.category(first) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me")
    )


def spreadsheet_cell(value: Any) -> str:
    """VALUE as a CSV cell that every spreadsheet shows as text, on one line: line breaks and tabs
    become spaces, control characters, bidirectional controls and undecodable bytes visible
    escapes (`grader.intake.printable.printable`), and a cell that `starts_formula` gets a leading
    apostrophe, as spreadsheets expect for text. The one rule for every CSV the kit writes."""
    text = printable(_BREAKS.sub(" ", value if isinstance(value, str) else printable(value)))
    return "'" + text if starts_formula(text) else text
