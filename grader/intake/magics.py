"""A notebook cell as plain Python: IPython's special lines become ``pass`` statements, line for line.

IPython runs a cell through its input transformer (IPython/core/inputtransformer2.py) before
Python sees it. The kit does what that transformer does, where it can, and says nothing else:

* a cell whose first line is a cell magic (``%%bash``) is not Python, except the magics whose body
  is (``%%time``...: their first line becomes a comment);
* a line magic, a shell escape or a help request (``%time x``, ``!pip list``, ``?torch.tril``) is
  one only where IPython's escape transformer finds one: as the first token (after indentation) of
  a *logical* line. A line that continues an expression (inside brackets, after a backslash: PEP
  8's ``% 2 == 0)``) or a line inside a multi-line string is Python, whatever its first character;
  ``!=`` and ``%=`` are operators, not escapes (the tokenizer reads them as one token, as IPython's
  transformer does). A magic's backslash-continued lines are the magic's;
* a line that is only a name and ``?`` or ``??`` (``torch.tril?``) at the start of a logical line
  is a help request.

Each such line becomes ``pass  # <the line>`` at its indentation, so that indentation stays valid
and line numbers do not change. Which lines start a logical line is what Python's tokenizer says:
it reads the cell a line at a time, and each line is decided (and, if it is IPython's, replaced)
before the tokenizer sees it, so the lines after a magic are read as IPython reads them once the
magic is transformed. Other IPython syntax (``x = %time y``, ``/f x``) is left as it is: Python
then says what is wrong with it.

Standard library only (the student bundle ships a copy of intake/). Linear in the cell: one pass
of the tokenizer, over at most MAX_SCANNED characters of a notebook's cells; a cell past that
budget keeps its lines as they are.
"""

from __future__ import annotations

import re
import tokenize

# Cell magics whose body is still Python; any other cell magic makes the cell non-Python.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
MAX_SCANNED = 2 * 1024 * 1024  # characters of a notebook's cells tokenized for IPython's lines
_FIRST_LINE = re.compile(r"^([^\S\n]*)(\S.*)$", re.M)  # the first line that is not blank
# A line that may be IPython's (checked first: most cells have none, and are not tokenized).
_CANDIDATE = re.compile(r"^[ \t\f]*(?:[%!?]|[A-Za-z_][\w.]*\?)", re.M)
_ESCAPE = re.compile(r"([ \t\f]*)(?:[%!](?!=)|\?)")  # an escape as the line's first token
_HELP = re.compile(r"([ \t\f]*)[A-Za-z_][\w.]{0,200}\?{1,2}")  # torch.tril?  torch.tril??
_STARTS_LOGICAL_LINE = (tokenize.NEWLINE, tokenize.NL)
_OPENING, _CLOSING = {"(", "[", "{"}, {")", "]", "}"}


class Magics:
    """Turns cells into plain Python (see the module), within one budget of characters scanned."""

    def __init__(self, budget: int = MAX_SCANNED):
        self.budget = budget

    def python_code(self, cell_source: str) -> str | None:
        """The cell as plain Python, or None when its body is not Python (``%%bash`` and the like)."""
        first = _FIRST_LINE.search(cell_source)
        if first is not None and first.group(2).startswith("%%"):
            magic = first.group(2)
            name = magic[2:].split(maxsplit=1)[0] if magic.strip() != "%%" else ""
            if name not in PYTHON_CELL_MAGICS:
                return None
            cell_source = cell_source[: first.start()] + "# " + cell_source[first.start() :]
        if not _CANDIDATE.search(cell_source) or len(cell_source) > self.budget:
            return cell_source
        self.budget -= len(cell_source)
        return "\n".join(_rewritten(cell_source.split("\n")))


def python_code(cell_source: str) -> str | None:
    """One cell as plain Python (see `Magics.python_code`)."""
    return Magics().python_code(cell_source)


def _ipython_line(line: str, continues_magic: str | None) -> str | None:
    """The indentation of `line` when it is IPython's (a logical line's start, or the continuation
    of a magic, whose indentation `continues_magic` is), else None."""
    if continues_magic is not None:
        return continues_magic
    escape = _ESCAPE.match(line)
    if escape is not None:
        return escape.group(1)
    help_line = _HELP.fullmatch(line)
    return help_line.group(1) if help_line is not None else None


def _rewritten(lines: list[str]) -> list[str]:
    """The lines, IPython's made ``pass`` statements (see the module docstring)."""
    out = list(lines)
    last: list[tokenize.TokenInfo] = []  # the last token the tokenizer gave
    depth = 0  # open brackets, counted as IPython counts them
    index = 0
    magic_indent: str | None = None  # the indentation of a magic whose line ends with a backslash

    def readline() -> str:
        nonlocal index, magic_indent
        if index >= len(lines):
            return ""
        number, line = index, lines[index]
        index += 1
        starts = (
            not last
            and number == 0
            or (bool(last) and last[0].end[0] == number and last[0].type in _STARTS_LOGICAL_LINE and depth == 0)
        )
        indent = _ipython_line(line, magic_indent) if starts or magic_indent is not None else None
        if indent is None:
            return line + "\n"
        magic_indent = indent if line.endswith("\\") else None
        out[number] = f"{indent}pass  # {line[len(indent) :] if line.startswith(indent) else line.lstrip()}"
        return out[number] + "\n"

    try:
        for token in tokenize.generate_tokens(readline):
            last[:] = [token]
            if token.type == tokenize.OP and token.string in _OPENING:
                depth += 1
            elif token.type == tokenize.OP and token.string in _CLOSING and depth:
                depth -= 1
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        pass  # Python will say what is wrong with the cell; lines not read yet stay as they are
    return out
