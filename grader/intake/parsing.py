"""A student's code parsed in the trusted process, within a budget.

`ast.parse` is CPython's parser, in C: nothing stops it once it runs, and part of its work grows
faster than the text (CPython 3.11 parses each replacement field of an f-string in time
proportional to the whole string: one f-string of 512 kB takes 15 s to parse, of 64 kB 0.3 s, of
32 kB 0.09 s; `benchmarks/trusted_text.py` measures it). So the trusted process parses a student's
text only when it is at most MAX_PARSED_CHARS characters long, which bounds what one parse can
cost; a longer text is treated as one that does not parse (its imports are read from its import
lines, its probes' traces are not shared: it costs the student nothing but sandbox time). The
kit's own modules are under 4 kB.

Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import ast
import functools

MAX_PARSED_CHARS = 32 * 1024


def parsed(text: str) -> ast.Module | None:
    """`text` parsed, or None when it does not parse or is longer than MAX_PARSED_CHARS."""
    if len(text) > MAX_PARSED_CHARS:
        return None
    try:
        return ast.parse(text)
    except Exception:  # noqa: BLE001 - SyntaxError, ValueError (a null byte), RecursionError, MemoryError,
        return None  # OverflowError; and CPython 3.11's SystemError ("AST constructor recursion depth mismatch")


@functools.lru_cache(maxsize=64)
def parsed_once(text: str) -> ast.Module | None:
    """`parsed`, made once per text: for readers that only look at the tree, never change it (the
    diagnosis reads a student's module for many failing tests)."""
    return parsed(text)
