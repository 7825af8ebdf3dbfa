"""Whether code that names a student's file was compiled from that file's text (runs in the
sandbox: standard library only).

Python names a frame's file and line from its code object, and `compile(text, __file__, "exec")`
gives code any file name: a traceback of code compiled at run time names the module's file, with
a line number of the *compiled text*. The line of the file with that number never ran (it may be a
docstring), so such a frame is no place in the student's file: the sandbox leaves it out of the
frames it reports and out of the places a trace records (where code was entered, the line that
called it, stays). The code imported from the file is told apart by value: the file's text is
compiled once, the way the import system compiles it, and a code object is the file's own when it
equals one of the code objects of that compilation (same instructions, constants, names and line
table; CPython compares code objects by value).
"""

from __future__ import annotations

import os
import stat
import types
from collections.abc import Iterator

MAX_SOURCE_BYTES = 8 * 1024 * 1024  # a larger file is not compiled again: none of its frames are quoted
_OPEN = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_compile = compile  # as the sandbox found it, before the code under test ran

_codes: dict[str, frozenset[types.CodeType]] = {}  # file -> the code objects its text compiles to
_errors: dict[str, int | None] = {}  # file -> the line of the syntax error its text has (None: none)
_verdicts: dict[int, tuple[types.CodeType, bool]] = {}  # id(code) -> (code, compiled from its file)


def _source(filename: str) -> bytes | None:
    """The file's bytes (a regular file, at most MAX_SOURCE_BYTES), or None."""
    try:
        fd = os.open(filename, _OPEN)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
        return data if len(data) <= MAX_SOURCE_BYTES else None
    finally:
        os.close(fd)


def _all(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _all(constant)


def _compiled(filename: str) -> frozenset[types.CodeType]:
    """The code objects the file's text compiles to, as importing it compiles them (bytes, so that
    the file's own coding line decodes them; its own `from __future__` flags only)."""
    if filename not in _codes:
        codes: frozenset[types.CodeType] = frozenset()
        data = _source(filename)
        if data is not None:
            try:
                codes = frozenset(_all(_compile(data, filename, "exec", dont_inherit=True)))
                _errors[filename] = None
            except SyntaxError as exc:
                _errors[filename] = exc.lineno
            except (ValueError, RecursionError, MemoryError):
                pass
        _codes[filename] = codes
    return _codes[filename]


def from_its_file(code: types.CodeType) -> bool:
    """Whether `code` is code of its file (`co_filename`) as the file's own text compiles."""
    known = _verdicts.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    try:
        verdict = code in _compiled(code.co_filename)
    except Exception:  # noqa: BLE001 - an unhashable constant: not shown to be the file's
        verdict = False
    _verdicts[id(code)] = (code, verdict)
    return verdict


def syntax_error_in_file(filename: str, line: int | None) -> bool:
    """Whether the file's own text has a syntax error on `line` (a SyntaxError that names the file
    may come from compiling other text under its name)."""
    _compiled(filename)
    return line is not None and _errors.get(filename) == line
