"""Source lines as Python's tokenizer numbers them: the one rule for splitting a student's code.

A line ends at "\\r\\n", "\\r" or "\\n", and nowhere else. `str.splitlines()` also splits at form
feed, "\\x0b", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, which Python reads as part of a line (a
PEP 8 page break, a character in a comment): every line number or line text the grader computes
or shows goes through here, so that the quoted line is the line Python ran.

Standard library only (the student bundle ships a copy of intake/). Linear in the text: the
splitting is one pass of a compiled pattern.
"""

from __future__ import annotations

import re

_LINE_END = re.compile(r"\r\n|\r|\n")


def source_lines(text: str, limit: int = 0) -> list[str]:
    """The lines of `text`, line 1 first, without their ends ("a\\n" is one line, "" none). With
    `limit`, only the first `limit` lines are split off (the text after them is not looked at)."""
    if limit > 0:
        return _LINE_END.split(text, maxsplit=limit)[:limit]
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # a final line end ends the last line; it does not start another
    return lines


def source_line(text: str, number: int) -> str:
    """The text of line `number` (1-based) of `text`, without its end; "" past the last line."""
    if number < 1:
        return ""
    lines = source_lines(text, number)
    return lines[number - 1] if len(lines) >= number else ""


def line_start(text: str, number: int) -> int:
    """Where line `number` (1-based) of `text` starts (the length of the text past its last line)."""
    start = 0
    for line in source_lines(text, number)[: number - 1]:
        start += len(line)
        start += 2 if text.startswith("\r\n", start) else 1 if start < len(text) else 0
    return start
