"""Names and texts that come from a submission, made safe to show and to use as file names.

Everything here is pure and standard-library only (the student bundle ships a copy of intake/).

* `shown(text)`: any string (a folder name with undecodable bytes, an exception message with
  control characters, lone surrogates, bidirectional overrides) as printable text: those characters
  become visible escapes (``\\xc4``, ``\\n``, ``\\u202e``), nothing else changes, and the result
  can always be encoded as UTF-8.
* `display_names(raw)`: one unique display name per student folder.
* `folder_names(names, reserved)`: one output folder name per student: a safe path component on
  Linux, macOS and Windows, unique even on case-insensitive file systems, never one of the class
  outputs written beside it.
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata

# Characters that change how text around them is shown (bidirectional controls, line separators),
# besides the C0/C1 control characters.
_INVISIBLE = {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF}
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
_UNSAFE_IN_NAME = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f]')
MAX_NAME_CHARS = 120


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


def shown(text: object, keep: str = "", limit: int | None = None) -> str:
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
    return shown(data.decode("utf-8", "surrogateescape"))


def display_names(raw_names: list[str]) -> dict[str, str]:
    """Raw folder name -> unique display name (escaped; a suffix " (2)" where two raw names would
    otherwise look alike, e.g. the bytes C4 and a name spelled with a backslash)."""
    taken: set[str] = set()
    names: dict[str, str] = {}
    for raw in sorted(raw_names, key=os.fsencode):
        base = shown(decode_name(raw), limit=MAX_NAME_CHARS)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base} ({n})"
        taken.add(name)
        names[raw] = name
    return names


def safe_component(name: str) -> str:
    """`name` as a file name that is safe and portable: no path separators or characters Windows
    refuses, no leading dot or dash, no trailing dot or space, not a reserved device name, at most
    MAX_NAME_CHARS characters (a digest keeps long names apart)."""
    text = unicodedata.normalize("NFC", shown(name))
    text = _UNSAFE_IN_NAME.sub("_", text).strip(" .")
    text = re.sub(r"^[-_.]+", "", text) if text.startswith(("-", ".")) else text
    if not text or text.split(".")[0].lower() in _WINDOWS_RESERVED:
        text = f"student_{text}" if text else "student"
    if len(text) > MAX_NAME_CHARS or len(text.encode("utf-8")) > 200:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        cut = text[: MAX_NAME_CHARS - 11]
        while len(cut.encode("utf-8")) > 180:
            cut = cut[:-1]
        text = f"{cut.rstrip(' .')}-{digest}"
    return text


def folder_names(names: list[str], reserved: set[str]) -> dict[str, str]:
    """Display name -> output folder name: safe components, unique when compared without case,
    never one of `reserved` (the class outputs: gradebook.csv, summary.html, ...)."""
    taken = {r.casefold() for r in reserved}
    out: dict[str, str] = {}
    for name in sorted(names):
        base = safe_component(name)
        candidate, n = base, 1
        while candidate.casefold() in taken:
            n += 1
            candidate = f"{base}-{n}"
        taken.add(candidate.casefold())
        out[name] = candidate
    return out
