"""Text that came from a submission, made safe to show.

Everything here is pure and standard-library only (the student bundle ships a copy of intake/).

* `printable(text)`: any string (a folder name with undecodable bytes, an exception message with
  control characters, lone surrogates, bidirectional overrides) as printable text: those characters
  become visible escapes (``\\xc4``, ``\\n``, ``\\u202e``), nothing else changes, and the result
  can always be encoded as UTF-8.
* `replace_surrogates(text)`: any text made encodable as UTF-8.
* Student names (how each is shown, the folder of its reports): see `grader.intake.names`; a .py
  file's bytes as text: `grader.intake.source_text`.
"""

from __future__ import annotations

import os
import re

# Characters that change how text around them is shown (bidirectional controls, line separators),
# besides the C0/C1 control characters.
_INVISIBLE = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(char: str, keep: str) -> str:
    code = ord(char)
    if char in keep:
        return char
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:  # any other lone surrogate
        return f"\\u{code:04x}"
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _needs_escape(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code <= 0xDFFF or code in _INVISIBLE


_SPECIAL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff" + "".join(chr(c) for c in sorted(_INVISIBLE)) + "]")


def printable(text: object, keep: str = "", limit: int | None = None) -> str:
    """`text` with control characters, undecodable bytes and lone surrogates, bidirectional
    controls and line separators written as visible escapes. `keep` lists characters left as they
    are (e.g. "\\n\\t" for a block of output); `limit` cuts the result (with "…") to that many
    characters."""
    if not isinstance(text, str):
        text = _plain(text)
    if limit is not None and len(text) > limit * 4 + 16:
        text = text[: limit * 4 + 16]  # escaping can only lengthen: no need to look further
    if _SPECIAL.search(text):
        text = _SPECIAL.sub(lambda m: _escape(m.group(), keep), text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def _plain(value: object) -> str:
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a value whose str() fails is shown by its type
        return f"<{type(value).__name__}>"


def decode_name(raw: str | bytes) -> str:
    """A file or folder name as listed by the OS (str with surrogateescape, or bytes) as text."""
    data = raw if isinstance(raw, bytes) else os.fsencode(raw)
    return printable(data.decode("utf-8", "surrogateescape"))


def replace_surrogates(text: str) -> str:
    """`text` with every lone surrogate (which UTF-8 cannot encode) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
