"""Text that came from a submission, made safe for what the platforms read: JSON documents with a
size limit (Gradescope's and PrairieLearn's results.json) and spreadsheet cells (LMS gradebooks)."""
from __future__ import annotations

import copy
import json
import re
import unicodedata
from typing import Any

ELLIPSIS = "\n[…]"
# C0 and C1 controls except tab and newline: terminal escapes (ANSI colours that PrairieLearn would
# render), carriage returns that overwrite a line, NULs.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Cells a spreadsheet would take for a formula, or that it strips before one (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


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


def fit_json(document: dict, limit: int, *, shrink: tuple[str, ...] = ("output", "message"),
             per_test: tuple[str, ...] = ("output", "message")) -> dict:
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


def spreadsheet_cell(text: Any) -> str:
    """A text cell that a spreadsheet shows as text, on one line: line breaks and tabs become spaces,
    other control characters U+FFFD, and a cell that would start a formula (= + - @, or tab, CR, LF
    before one) gets a leading apostrophe, as spreadsheets expect for text."""
    text = re.sub(r"[\t\r\n]", " ", str(text))
    text = unicodedata.normalize("NFC", clean(text))
    return "'" + text if text.startswith(FORMULA_STARTS) else text
