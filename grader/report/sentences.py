"""What the reports say, with the student's text kept apart from the grader's words.

A `Said` is a catalogue sentence with its parameters in place that remembers its parts:

* ``text``: the grader's words (from the catalogues);
* ``code``: what a catalogue sentence quotes between backticks (a function name, `torch.tril`);
* ``student``: a value that came from the submission or from what its code did (a file or folder
  name, an exception type, a function name, a value it returned). It is always shown quoted, as
  code, never as the grader's words: in HTML an escaped ``<code class="student">``, in Markdown a
  code span whose fence is longer than any backtick run inside, in plain text the same code span.
  Control characters, undecodable bytes and line breaks are shown as escapes and the length is
  capped, so it can never start a new line, a block, a link, an image or raw HTML.

`Said` is a `str` (its plain-text form), so it goes anywhere text goes; templates render it with
the `md` filter (Markdown) or by autoescaping (HTML, through ``__html__``). Longer student output
(an exception's message) is not part of any sentence: `output_block` and `fenced` show it as a
block of its own.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

from markupsafe import Markup, escape

from grader.i18n import Catalog
from grader.intake.printable import printable

INLINE_LIMIT = 200  # characters of student text inside a sentence
OUTPUT_LIMIT = 2000  # characters of a block of student output
OUTPUT_LINES = 30
_SENTINEL = re.compile("\x00(\\d+)\x00")
_BACKTICKS = re.compile("`+")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x85\x0b\x0c]+")


class Said(str):
    """A message whose parts know whether they are the grader's words, quoted code or the student's
    text. Never changed once made (the same Said may stand in many reports: `say`, `words`)."""

    parts: tuple[tuple[str, str], ...]

    def __new__(cls, parts: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> Said:
        merged: list[tuple[str, str]] = []
        for kind, value in parts:
            if not value:
                continue
            if merged and merged[-1][0] == kind and kind == "text":
                merged[-1] = (kind, merged[-1][1] + value)
            else:
                merged.append((kind, value))
        self = super().__new__(cls, "".join(value if kind == "text" else code_span(value) for kind, value in merged))
        object.__setattr__(self, "parts", tuple((str(kind), str(value)) for kind, value in merged))
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Said is never changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Said is never changed")

    def __html__(self) -> str:
        out = []
        for kind, value in self.parts:
            if kind == "text":
                out.append(str(escape(value)))
            elif kind == "code":
                out.append(f"<code>{escape(value)}</code>")
            else:
                out.append(f'<code class="student">{escape(value)}</code>')
        return "".join(out)

    def markdown(self) -> str:
        return "".join(markdown_text(value) if kind == "text" else code_span(value) for kind, value in self.parts)

    def plain(self) -> str:
        """Without any quoting marks (an HTML <title>, a tooltip, an SVG label)."""
        return "".join(value for _, value in self.parts)


def trusted(text: str) -> Said:
    """Text the grader made itself (a module name it checked, a section title): shown as words."""
    return Said([("text", str(text))])


def student(value: Any, limit: int = INLINE_LIMIT) -> Said:
    """A value from the submission, as one quoted part."""
    return Said([("student", inline(value, limit))])


MAX_CACHED = 1000  # characters of a text whose rendering is kept


def _per_text(function: Callable[[str], Any]) -> Callable[[Any], Any]:
    """`function` of a text, made once per text: a class's reports say the same sentences (and
    table numbers) again and again. The key is the text as an exact str (never a float, whose
    -0.0 equals 0.0, nor a str subclass); a text longer than MAX_CACHED characters is not kept."""
    kept = functools.lru_cache(maxsize=8192)(function)

    @functools.wraps(function)
    def once(value: Any) -> Any:
        text = str.__str__(str(value))
        return kept(text) if len(text) <= MAX_CACHED else function(text)

    return once


@_per_text
def words(text: str) -> Said:
    """Text of the grader's own (a catalogue sentence), its backtick spans as code."""
    return Said(_ticks(text))


def _ticks(text: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    for index, piece in enumerate(text.split("`")):
        parts.append(("code" if index % 2 else "text", piece))
    if text.count("`") % 2:  # an unpaired backtick is just a backtick
        return [("text", text)]
    return parts


def say(catalog: Catalog, key: str, **params: Any) -> Said:
    """The catalogue message `key` with `params` in place: numbers and `Said` values as they are,
    every other value as the student's text (quoted). Made once per language, key and parameters
    when these are plain values (a class's reports say the same sentences again and again)."""
    signature = _signature(params)
    if signature is None:
        return _say(catalog, key, params)
    cached = (catalog.lang, key, signature)
    said = _SAID.get(cached)
    if said is None:
        if len(_SAID) >= MAX_SAID:
            _SAID.clear()
        said = _SAID[cached] = _say(catalog, key, params)
    return said


MAX_SAID = 4096
_SAID: dict[tuple, Said] = {}
_PLAIN = (str, int, float, bool, type(None))


def _signature(params: dict[str, Any]) -> tuple | None:
    """What `say`'s result depends on, as a key: exact types (True is not 1, "1" is not 1) and
    floats by repr (-0.0 is not 0.0); a Said by its parts. None for any other value, for long text
    and for huge integers (the cache holds at most MAX_SAID keys, each of a few short values)."""
    signature = []
    for name, value in params.items():
        kind = type(value)
        if (kind is Said or kind is str) and len(value) > INLINE_LIMIT:
            return None
        if kind is Said:
            signature.append((name, kind, value.parts))
        elif kind in _PLAIN and (kind is not int or abs(value) < 10**18):
            signature.append((name, kind, repr(value) if kind is float else value))
        elif (
            kind in (list, tuple)
            and len(value) <= 16
            and all(type(v) is float or (type(v) is int and abs(v) < 10**18) for v in value)
        ):
            signature.append((name, kind, tuple((type(v), repr(v) if type(v) is float else v) for v in value)))
        else:
            return None
    return tuple(signature)


def _say(catalog: Catalog, key: str, params: dict[str, Any]) -> Said:
    plain: dict[str, str] = {}
    inserted: list[Said] = []
    for name, value in params.items():
        if isinstance(value, Said):
            said = value
        elif _is_number(value):
            plain[name] = number(value)
            continue
        elif isinstance(value, (list, tuple)) and len(value) <= 16 and all(_is_number(v) for v in value):
            plain[name] = "(" + ", ".join(number(v) for v in value) + ")"
            continue
        else:
            said = student(value)
        plain[name] = f"\x00{len(inserted)}\x00"
        inserted.append(said)
    text = catalog.t(key, **plain)
    parts: list[tuple[str, str]] = []
    for kind, piece in _ticks(text):
        position = 0
        for match in _SENTINEL.finditer(piece):
            parts.append((kind, piece[position : match.start()]))
            said = inserted[int(match.group(1))]
            parts.extend(
                said.parts
                if kind == "text"
                else [("student" if any(k == "student" for k, _ in said.parts) else "code", said.plain())]
            )
            position = match.end()
        parts.append((kind, piece[position:]))
    return Said(parts)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: int | float) -> str:
    """A number as text, whatever it is (NaN, infinities, integers too long for str())."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:g}" if abs(value) >= 1e6 or (value and abs(value) < 1e-4) else f"{value:.6g}"
    if abs(value) < 10**18:
        return str(value)
    return f"~1e{int(value.bit_length() * 0.30103)}"


def inline(value: Any, limit: int = INLINE_LIMIT) -> str:
    """A student's value as one line of text: escapes for control characters, capped."""
    return printable(_flat(value), limit=limit)


def _flat(value: Any, depth: int = 0) -> str:
    """Any value as text without recursion bombs: nested containers are cut at depth 3 and 16 items."""
    if isinstance(value, str):
        return value[: OUTPUT_LIMIT * 4]
    if _is_number(value):
        return number(value)
    if isinstance(value, (list, tuple)):
        if depth >= 3:
            return "[…]"
        items = [_flat(v, depth + 1) for v in value[:16]]
        return "[" + ", ".join(items) + (", …" if len(value) > 16 else "") + "]"
    if isinstance(value, dict):
        return "{…}"
    if value is None or isinstance(value, bool):
        return str(value)
    return f"<{type(value).__name__}>"


def output_block(value: Any) -> str:
    """A block of the student's output (an exception's message): its lines kept, tabs as spaces,
    every other control character escaped, at most OUTPUT_LINES lines of OUTPUT_LIMIT characters."""
    text = printable(_flat(value).replace("\r\n", "\n").replace("\t", "    "), keep="\n", limit=OUTPUT_LIMIT)
    lines = text.split("\n")
    if len(lines) > OUTPUT_LINES:
        lines = lines[:OUTPUT_LINES] + ["…"]
    return "\n".join(lines).strip("\n")


def code_span(text: str) -> str:
    """`text` as a Markdown code span that nothing inside can close (also readable as plain text)."""
    if not text:
        return '""'
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, indent: str = "") -> str:
    """`text` as a fenced Markdown code block (indented by `indent`) that nothing inside can end."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [indent + fence, *(indent + line if line.strip() else indent for line in text.split("\n")), indent + fence]
    return "\n".join(lines)


@_per_text
def markdown_text(text: str) -> str:
    """The grader's own words (trusted catalogue text), safe inside a Markdown paragraph, list item
    or table cell: emphasis, links, raw HTML and table pipes are escaped; line breaks become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", _LINE_BREAKS.sub(" ", text))


def markdown(value: Any) -> str:
    """The `md` filter: a Said with its parts, any other text as the grader's words."""
    if isinstance(value, Said):
        return value.markdown()
    return _words_markdown(value)


def html(value: Any) -> Markup:
    """Catalogue text (or a Said) as HTML: escaped, backtick spans as <code>."""
    if isinstance(value, Said):
        return Markup(value.__html__())
    return Markup(_words_html(value))


@_per_text
def _words_markdown(text: str) -> str:  # a table's every number comes here
    return words(text).markdown()


@_per_text
def _words_html(text: str) -> str:
    return words(text).__html__()


def plain(value: Any) -> str:
    return value.plain() if isinstance(value, Said) else str(value)
