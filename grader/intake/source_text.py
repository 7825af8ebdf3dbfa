"""A .py file's bytes as the text Python would read (PEP 263), decoded only by the codecs of
SOURCE_ENCODINGS, always encodable as UTF-8. Pure and standard-library only (the student bundle
ships a copy of intake/)."""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import re
from dataclasses import dataclass

from grader.intake.lines import line_start, source_lines
from grader.intake.printable import replace_surrogates

# PEP 263: a comment on line 1 or 2 naming the file's encoding ("# -*- coding: gbk -*-").
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
# The encodings a .py file is read in (their codec modules): UTF-8 and the legacy encodings Chinese
# and European classes really save in. Their decoders are C code, linear in the file. No other
# codec ever decodes a submission (CPython's `punycode` decoder, for one, is Python code and
# quadratic: 500 kB take three minutes); a file that declares another is read as UTF-8, with a note.
SOURCE_ENCODINGS = frozenset(
    {
        "utf_8",
        "utf_8_sig",
        "ascii",
        "gbk",
        "gb2312",
        "gb18030",
        "big5",
        "big5hkscs",
        "cp950",
        "latin_1",
        *(f"iso8859_{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16)),
        *(f"cp125{n}" for n in range(9)),
    }
)
_ALIASES = encodings.aliases.aliases


def decode_source(data: bytes) -> str:
    """A .py file's bytes as text (`read_source(data).text`)."""
    return read_source(data).text


@dataclass(frozen=True)
class SourceText:
    """A .py file's text, and the encoding its coding line declares."""

    text: str
    declared: str = ""  # the encoding the coding line names, as written ("" when there is none)
    ignored: bool = False  # the declared encoding is not one of SOURCE_ENCODINGS: read as UTF-8


def read_source(data: bytes) -> SourceText:
    """A .py file's bytes as text, as Python reads the file: in the encoding its coding declaration
    names (PEP 263; ``# -*- coding: gbk -*-`` is common in Chinese classes) when that is one of
    SOURCE_ENCODINGS, else (no declaration, or another encoding: `ignored`) as UTF-8; bytes that do
    not decode as U+FFFD. The text travels on as UTF-8 (the sandbox reads it as Python would), so
    a declaration of another encoding is rewritten, on its own line, to say utf-8 (line numbers
    and the code are unchanged). Only codecs of SOURCE_ENCODINGS ever decode: the work is linear
    in the file whatever it declares."""
    latin = _decoded(data, "latin_1")  # one character per byte: the declaration found where Python looks
    span = _declaration(latin)
    if span is None:
        return SourceText(_decoded(data, "utf_8"))
    start, end = span
    declared = latin[start:end]
    codec = _codec_module(declared)
    if codec in ("utf_8", "utf_8_sig") or data.startswith(codecs.BOM_UTF8):
        return SourceText(_decoded(data, "utf_8"), declared)  # (Python itself refuses a BOM with another name)
    ignored = codec not in SOURCE_ENCODINGS
    text = _decoded(data[:start] + b"utf-8" + data[end:], "utf_8" if ignored else codec)
    return SourceText(replace_surrogates(text), declared, ignored)


def _decoded(data: bytes, codec: str) -> str:
    """`data` decoded by `codec` (one of SOURCE_ENCODINGS), undecodable bytes as U+FFFD."""
    return codecs.lookup(codec).decode(data, "replace")[0]


def _declaration(text: str) -> tuple[int, int] | None:
    """Where the encoding name of a PEP 263 declaration is in `text` (offsets): on line 1, or on
    line 2 after a comment or a blank line (lines as the tokenizer splits them)."""
    for number, line in enumerate(source_lines(text, 2), start=1):
        match = _CODING.match(line)
        if match is not None:
            start = line_start(text, number)
            return start + match.start(1), start + match.end(1)
        if line.strip(" \t\f") and not line.lstrip(" \t\f").startswith("#"):
            return None  # code on line 1: a declaration on line 2 does not count
    return None


def _codec_module(name: str) -> str:
    """The codec module Python's registry would take for the declared `name` (as its tokenizer and
    `encodings.search_function` normalise it), found without importing or running any codec."""
    normal = name[:12].lower().replace("_", "-")
    if normal == "utf-8" or normal.startswith("utf-8-"):
        return "utf_8"  # "utf-8-unix" (Emacs) is UTF-8 to Python
    if normal in ("latin-1", "iso-8859-1", "iso-latin-1") or normal.startswith(
        ("latin-1-", "iso-8859-1-", "iso-latin-1-")
    ):
        return "latin_1"
    key = encodings.normalize_encoding(name.lower())
    return _ALIASES.get(key) or _ALIASES.get(key.replace(".", "_")) or key
