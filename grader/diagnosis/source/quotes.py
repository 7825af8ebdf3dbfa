"""The student's code as the reports quote it: the line Python ran, read from the submission's own
sources.

A line number comes from the sandbox (a traceback's frame, a traced op's line: Python's own
numbering); the code shown with it is the text of that line in the source the grader read, split
as Python's tokenizer splits lines (`grader.intake.lines`: a form feed or a U+2028 in a comment
starts no line), so it is always the line that ran, never the child's word for it. A frame in a
file the grader does not hold (one the student's code wrote and imported) keeps the child's text.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace

from grader.intake.lines import source_lines
from grader.records import ProbeError, StudentFrame

MAX_CODE = 300  # characters of a quoted line


@functools.lru_cache(maxsize=16)
def _lines(text: str) -> tuple[str, ...]:
    """A module's lines, split once for all the frames that quote it."""
    return tuple(source_lines(text))


def code_at(file: str, line: int, sources: Mapping[str, str]) -> str | None:
    """The code on line `line` of the submission's `file` (`x.py`), without its indentation; None
    when `file` is not one of the submission's modules."""
    text = sources.get(file[:-3]) if file.endswith(".py") else None
    if not isinstance(text, str):
        return None
    lines = _lines(text)
    return lines[line - 1].strip()[:MAX_CODE] if isinstance(line, int) and 0 < line <= len(lines) else ""


def frame(file: str, line: int, function: str, sources: Mapping[str, str]) -> StudentFrame:
    """A student's line with its code, read from the submission's own sources."""
    return StudentFrame(file, line, function, code_at(file, line, sources) or "")


def quoted(error: ProbeError | None, sources: Mapping[str, str]) -> ProbeError | None:
    """`error` with the code of each of its frames read from the submission's sources (`error`
    itself when that changes nothing)."""
    if error is None or not error.frames:
        return error
    frames = []
    for item in error.frames:
        code = code_at(item.file, item.line, sources)
        frames.append(item if code is None or code == item.code else replace(item, code=code))
    return error if frames == list(error.frames) else replace(error, frames=tuple(frames))
