"""Student names: how each is shown, and the folder its reports go to.

A raw name is what the class folder lists for a student (or what a platform calls them): any
text, a byte that is not UTF-8 kept as a surrogate escape (as `os.fsdecode` gives it). Standard
library only (the student bundle ships a copy of intake/).

* `shown_name(raw)`: the name as every listing shows it (gradebook, summary, feedback, exports).
  Whatever would be invisible, not text, or taken for another character is written as an escape:
  ``\\xNN`` a byte that is not UTF-8; ``\\n``, ``\\r``, ``\\t``, ``\\x01`` a control character;
  ``\\uXXXX`` or ``\\UXXXXXXXX`` any other character escaped: format characters (zero-width
  spaces and joiners, word joiner, soft hyphen, bidirectional controls, tag characters),
  variation selectors and other default-ignorable characters, spaces other than U+0020 and a
  U+0020 at either end or beside another, a combining mark with nothing to combine with (or past
  the fourth on one letter), in a name that passes for Latin (Latin letters beside letters of
  another script that Unicode draws like ASCII: Cyrillic а, Greek ο, Armenian օ, from
  confusables.txt, `grader.intake.confusables`) every character drawn like ASCII and every letter
  of another script, private-use and unassigned characters. A backslash shows doubled, so a shown
  name reads back to exactly its raw name (`raw_name`). Chinese, accented (NFC or NFD) and other
  names show as they are.
* `display_names(raws)`: the shown names of a class, all different, and no two that look alike
  (`looks`: Unicode's skeleton of the compatibility form, where each character drawn like ASCII
  reads as that ASCII; or one name drawn like another in every letter but one that Unicode does
  not list, with letters of another script drawn like ASCII: `grader.intake.lookalikes`). Names that would ("Zoë"
  in NFC and in NFD, "alice" and "alıce", "ALICE" and Cherokee "ᎪᏞᏆᏟᎬ") are shown strictly, every
  combining mark, compatibility character and character drawn like ASCII escaped too, and in a
  name with letters of another script drawn like ASCII every letter not of the Latin script
  ("Zoë", "Zoe\\u0308"; "al\\u0131ce"); should even that not tell them apart, everything but
  printable ASCII is escaped.
* `folder_names(raws, reserved)`: the report folder of each. A name that is shown as itself, is
  a safe, portable folder name (`safe_component`) and looks like nothing else (no compatibility
  character, no character drawn like ASCII that is not ASCII) keeps it, exactly, whoever else is
  in the class; any other name gets its safe form, ``~`` and the first 8 hex digits of the SHA-256
  of its bytes (``printf '%s' NAME | sha256sum``), a form no kept name can have. The folder
  depends only on the name itself (should two digests be made to meet, the names involved take
  longer ones; never a kept name's folder).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter

from grader.intake.lookalikes import alike, confusable, drawn_as_itself, imitation, is_latin, mixes_scripts

MAX_NAME_CHARS = 120  # of a shown name or a folder name
MAX_FOLDER_BYTES = 200
MAX_MARKS = 4  # combining marks shown on one letter (Vietnamese, Hebrew, Indic names need up to ~3)
DIGEST_DIGITS = 8
_HEX_SUFFIX = re.compile(r"~[0-9a-fA-F]{8,}$")  # the form of an altered name's folder
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
_UNSAFE_IN_NAME = set('\\/:*?"<>|')
_UNSAFE_ASCII = re.compile(r'[\\/:*?"<>|]')
_FORMULA_START = set("=+-@\uff1d\uff0b\uff0d\uff20")  # a folder name a spreadsheet would run (see textsafe)
# Default-ignorable characters that are not format characters (Unicode's DerivedCoreProperties),
# and blanks that show nothing (the Braille blank).
_IGNORABLE = {
    0x034F,
    0x115F,
    0x1160,
    0x17B4,
    0x17B5,
    0x2800,
    0x3164,
    0xFFA0,
    *range(0x180B, 0x1810),
    *range(0xFE00, 0xFE10),
    *range(0xE0100, 0xE01F0),
}
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
# -- shown names -----------------------------------------------------------------------------------


def _escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if char in "\n\r\t\\":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _is_mark(char: str, category: str) -> bool:
    return category in ("Mn", "Me") and ord(char) not in _IGNORABLE


def _hidden(raw: str, index: int, category: str) -> bool:
    """Whether raw[index] (not a combining mark) would be invisible or not text."""
    char = raw[index]
    if char == " ":
        return index in (0, len(raw) - 1) or raw[index - 1] == " " or raw[index + 1] == " "
    return category in _HIDDEN_CATEGORIES or category == "Zs" or ord(char) in _IGNORABLE


NORMAL, STRICT, ASCII = 0, 1, 2  # how much of a name `shown_name` escapes
_PLAIN = re.compile(r"[!-\[\]-~]+(?: [!-\[\]-~]+)*")  # printable ASCII but the backslash, single inner spaces


def _escaped_at(char: str, level: int, imitates: bool) -> bool:
    if level == ASCII:
        return not " " <= char <= "~"
    if imitates and (confusable(char) or (char.isalpha() and not is_latin(char))):
        return True  # a name that passes for Latin: its look-alikes and its other script's letters
    return level == STRICT and (confusable(char) or unicodedata.normalize("NFKC", char) != char)


def shown_name(raw: str, level: int = NORMAL) -> str:
    """RAW as listings show it (see the module's docstring). In a name that passes for Latin (Latin
    letters with letters of another script drawn like ASCII; at level STRICT, any letters of
    another script drawn like ASCII) every character drawn like ASCII and every letter not of the
    Latin script is escaped. At level STRICT every combining mark, compatibility character and
    character drawn like ASCII is escaped as well; at level ASCII every character but printable
    ASCII."""
    if _PLAIN.fullmatch(raw):
        return raw  # nothing to escape at any level (most names)
    imitates = mixes_scripts(raw) or (level == STRICT and any(imitation(c) for c in raw))
    out: list[str] = []
    marks, base = 0, False  # combining marks on the last letter shown; whether there is one
    for index, char in enumerate(raw):
        category = unicodedata.category(char)
        if _is_mark(char, category):
            marks += 1
            visible = base and marks <= MAX_MARKS and level == NORMAL
            base = visible
        else:
            visible = not (_hidden(raw, index, category) or _escaped_at(char, level, imitates))
            marks, base = 0, visible and char != " "
        # after an escape, a mark would sit on its last digit: it is escaped too (base is False)
        out.append(char if visible and char != "\\" else _escape(char))
    return "".join(out)


_ESCAPES = re.compile(r"\\(\\|n|r|t|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def raw_name(shown: str) -> str:
    """The raw name a shown name was made from (escapes read back; other backslashes kept)."""

    def one(match: re.Match) -> str:
        escape = match.group(1)
        if escape in ("\\", "n", "r", "t"):
            return {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}[escape]
        code = int(escape[1:], 16)
        if escape[0] == "x" and code >= 0x80:
            return chr(0xDC00 + code)
        return chr(code) if code <= 0x10FFFF else match.group(0)

    return _ESCAPES.sub(one, shown)


def digest(raw: str) -> str:
    """The SHA-256 (hex) of a name's bytes as the file system holds them (UTF-8)."""
    try:
        data = raw.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no byte (a name from elsewhere than a folder)
        data = raw.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _fit(shown: str, raw: str) -> str:
    if len(shown) <= MAX_NAME_CHARS:
        return shown
    return shown[: MAX_NAME_CHARS - 18] + "…~" + digest(raw)[:16]


def _told_apart(raw_names: list[str]) -> dict[str, str]:
    """Raw name -> shown name, no two that look alike (`alike`): the names of a group that would
    are shown at the next level (STRICT, then ASCII, where different names always look different)."""
    shown = {raw: shown_name(raw) for raw in raw_names}
    level = dict.fromkeys(raw_names, NORMAL)
    while True:
        raised = {raw for group in alike(shown) for raw in group if level[raw] < ASCII}
        if not raised:
            return shown
        for raw in raised:
            level[raw] += 1
            shown[raw] = shown_name(raw, level[raw])


def display_names(raw_names: list[str]) -> dict[str, str]:
    """Raw name -> shown name, all different and none looking like another (see the module's
    docstring). A name too long to list is cut, marked with "…~" and 16 hex digits of its digest."""
    shown = _told_apart(raw_names)
    names = {raw: _fit(s, raw) for raw, s in shown.items()}
    # Different names are shown differently (escapes read back); only a cut name can meet another,
    # one made to look like it: the cut one takes a number
    taken = set(names.values())
    counts = Counter(names.values())
    for raw in sorted((r for r in names if counts[names[r]] > 1 and names[r] != shown[r]), key=digest):
        n = 2
        while f"{names[raw]} ({n})" in taken:
            n += 1
        names[raw] = f"{names[raw]} ({n})"
        taken.add(names[raw])
    return names


# -- report folders --------------------------------------------------------------------------------


def _folder_char(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"_x{code - 0xDC00:02x}"
    category = unicodedata.category(char)
    if category in ("Cf", "Me") or code in _IGNORABLE:
        return ""  # invisible: left out of the folder's name
    if char in _UNSAFE_IN_NAME or category in _HIDDEN_CATEGORIES or (category == "Zs" and char != " "):
        return "_"
    return char


def safe_component(name: str) -> str:
    """NAME as a folder name that is safe and portable: NFC; no path separators, no characters
    Windows refuses, no controls or invisible characters; no leading dot, dash or space, no
    trailing dot or space; never starting like a spreadsheet formula or with a combining mark; not a
    reserved device name; at most MAX_NAME_CHARS characters and MAX_FOLDER_BYTES bytes."""
    if name.isascii() and name.isprintable():
        text = _UNSAFE_ASCII.sub("_", name).strip(" .")
    else:
        text = "".join(_folder_char(c) for c in unicodedata.normalize("NFC", name)).strip(" .")
    text = re.sub(r"^[-_.]+", "", text) if text.startswith(("-", ".")) else text
    if text[:1] in _FORMULA_START or text[:1].isspace() or unicodedata.category(text[:1] or "_")[0] == "M":
        text = "_" + text  # (a combining mark first would sit on whatever comes before the name)
    if not text or text.split(".")[0].lower() in _WINDOWS_RESERVED:
        text = f"student_{text}" if text else "student"
    return _cut(text, MAX_NAME_CHARS, MAX_FOLDER_BYTES)


def _cut(text: str, chars: int, size: int) -> str:
    text = text[:chars]
    while len(text.encode("utf-8", "surrogatepass")) > size:
        text = text[:-1]
    return text


def keeps_name(raw: str, reserved: set[str]) -> bool:
    """Whether RAW is its own report folder's name: shown as itself, a safe portable folder name,
    looking like nothing else (no compatibility character, no character that is not ASCII drawn
    like ASCII: `drawn_as_itself`), not one of the class outputs (`reserved`, without regard to case), not of
    an altered name's form."""
    return (
        shown_name(raw) == raw
        and safe_component(raw) == raw
        and drawn_as_itself(raw)
        and not _HEX_SUFFIX.search(raw)
        and raw.casefold() not in {r.casefold() for r in reserved}
    )


def altered_folder(raw: str, digits: int = DIGEST_DIGITS) -> str:
    """The folder of a name that does not keep its own: its safe form, "~" and a digest of it."""
    suffix = "~" + digest(raw)[:digits]
    base = _cut(safe_component(raw), MAX_NAME_CHARS - len(suffix), MAX_FOLDER_BYTES - len(suffix)).rstrip(" .")
    return (base or "student") + suffix


def folder_names(raw_names: list[str], reserved: set[str]) -> dict[str, str]:
    """Raw name -> report folder (see the module's docstring): different for different names, also
    without regard to case for every name that does not keep its own, never one of `reserved`."""
    reserved_folded = {r.casefold() for r in reserved}
    folders = {raw: raw for raw in raw_names if keeps_name(raw, reserved)}
    taken = {f.casefold() for f in folders.values()} | reserved_folded
    pending = sorted({raw for raw in raw_names if raw not in folders}, key=digest)
    digits = DIGEST_DIGITS
    while pending and digits <= 64:
        proposed = {raw: altered_folder(raw, digits) for raw in pending}
        counts = Counter(p.casefold() for p in proposed.values())
        for raw, folder in proposed.items():
            if counts[folder.casefold()] == 1 and folder.casefold() not in taken:
                folders[raw] = folder
        taken |= {folders[raw].casefold() for raw in pending if raw in folders}
        pending = [raw for raw in pending if raw not in folders]
        digits *= 2
    for raw in pending:  # the same bytes from two spellings of a name (not from one file system)
        n = 2
        while (candidate := f"{altered_folder(raw, 64)}-{n}").casefold() in taken:
            n += 1
        folders[raw] = candidate
        taken.add(candidate.casefold())
    return folders
