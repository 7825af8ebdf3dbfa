"""Names that look misspelt: a name the contract requires that a submission lacks, where one that
looks like it is defined (`MultiHeadAttnetion`, `SelfAttention_V2`, `def __init_`, `def forwad`,
`qkv_bais=`).

Looks like: the same without regard to case or underscores, or at most one edit away (two for a
name of eight letters or more; an edit inserts, deletes or replaces a letter, or swaps two
neighbours). A name the contract requires elsewhere is never taken for another one
(`SelfAttention_v1` is no misspelling of `SelfAttention_v2`).

Standard library only (the student bundle ships a copy of intake/). Sources are parsed within the
budget of `grader.intake.parsing`; a longer one is searched for its top-level names only. At most
MAX_COMPARED_NAMES distinct names of a module, and as many of the notebooks' other definitions,
are compared with each name the contract requires (the first ones, in reading order): what the
search costs does not grow with what a submission defines, and `Search.uncompared` names the
files whose other names were not compared, for a note.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from grader.intake.chapter import Defined
from grader.intake.contract import ALL_NAMES, CLASSES, CONSTRUCTOR, FORWARD, PARAMETERS, REQUIRED
from grader.intake.notebook_cells import _TOP_LEVEL_NAME, Origins, origin_at
from grader.intake.parsing import parsed_once
from grader.records import MODULES, NearMiss

# Distinct names compared with the contract's: each costs up to ~1 ms (every required name is
# compared with it); a chapter notebook defines some 30 to 100.
MAX_COMPARED_NAMES = 1000


@dataclass(frozen=True)
class Place:
    name: str
    file: str
    line: int
    cell: int = 0


def distance(a: str, b: str, limit: int = 3) -> int:
    """Edits from `a` to `b` (insert, delete, replace, swap two neighbours); `limit` + 1 when more."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit and min(previous) > limit:
            return limit + 1  # no later row can come back under the limit (a swap looks two rows back)
        previous2, previous = previous, current
    return min(previous[len(b)], limit + 1)


def closeness(wanted: str, found: str) -> int | None:
    """How far `found` is from `wanted` (0: only case or underscores differ), or None: not close."""
    if found == wanted:
        return None
    if found.casefold().replace("_", "") == wanted.casefold().replace("_", ""):
        return 0
    allowed = 2 if len(wanted) >= 8 else 1 if len(wanted) >= 4 else 0
    edits = distance(found.casefold(), wanted.casefold(), allowed)
    return edits if edits <= allowed else None


def nearest(wanted: str, places: Iterable[Place]) -> Place | None:
    best: tuple[int, Place] | None = None
    for place in places:
        if place.name in ALL_NAMES:
            continue
        score = closeness(wanted, place.name)
        if score is not None and (best is None or score < best[0]):
            best = (score, place)
    return best[1] if best else None


class _Module:
    """A module's source: its top-level names and classes, each where the student wrote it."""

    def __init__(self, module: str, source: str, runs: Origins | None):
        self.module, self.runs = module, runs
        self.tree = parsed_once(source)  # read only; the diagnosis reads the same tree again
        if self.tree is not None:
            body = self.tree.body
            self.top = [self.place(n.name, n.lineno) for n in body if isinstance(n, _DEFS)]
            self.top += [
                self.place(t.id, n.lineno)
                for n in body
                if isinstance(n, ast.Assign)
                for t in n.targets
                if isinstance(t, ast.Name)
            ]
        else:  # numbered in one pass: counting from the start for each name would be quadratic
            line_starts = [0, *(m.end() for m in re.finditer("\n", source))]
            self.top = [
                self.place(m.group(1) or m.group(2), bisect.bisect_right(line_starts, m.start()))
                for m in _TOP_LEVEL_NAME.finditer(source)
            ]

    def place(self, name: str, line: int) -> Place:
        origin = origin_at(self.runs, line) if self.runs else None
        if origin is not None:
            return Place(name, origin.notebook, origin.line, origin.cell)
        return Place(name, f"{self.module}.py", line)

    def classes(self) -> list[ast.ClassDef]:
        return [n for n in (self.tree.body if self.tree else []) if isinstance(n, ast.ClassDef)]

    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        return [
            n for n in (self.tree.body if self.tree else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Search:
    """The near misses found, and the files some of whose names were not compared (over the cap)."""

    found: tuple[NearMiss, ...]
    uncompared: tuple[str, ...] = ()


class _Compared:
    """The places compared, at most MAX_COMPARED_NAMES distinct names of each list; remembers the
    files of the places left out."""

    def __init__(self) -> None:
        self.left_out: dict[str, None] = {}

    def first(self, places: Iterable[Place]) -> list[Place]:
        kept: dict[str, Place] = {}
        for place in places:
            if place.name in kept:
                continue  # the first place of a name is the one `nearest` would name
            if len(kept) >= MAX_COMPARED_NAMES:
                self.left_out[place.file] = None
                break
            kept[place.name] = place
        return list(kept.values())


def near_misses(
    sources: dict[str, str], origins: dict[str, Origins], notebooks: Iterable[tuple[str, Defined]] = ()
) -> tuple[NearMiss, ...]:
    """The near misses of a submission (see `search`)."""
    return search(sources, origins, notebooks).found


def search(
    sources: dict[str, str], origins: dict[str, Origins], notebooks: Iterable[tuple[str, Defined]] = ()
) -> Search:
    """The near misses of a submission: its modules' sources (and, for those made from notebooks,
    where their lines came from) and the functions and classes its notebooks define elsewhere
    (notebook, definition)."""
    compared = _Compared()
    modules = {m: _Module(m, sources[m], origins.get(m)) for m in MODULES if m in sources}
    elsewhere = compared.first(Place(d.name, notebook, d.line, d.cell) for notebook, d in notebooks)
    found: list[NearMiss] = []
    for module in MODULES:
        code = modules.get(module)
        defined = {p.name for p in code.top} if code else set()
        own = compared.first(code.top) if code else []
        for wanted in REQUIRED[module]:
            if wanted in defined:
                continue
            place = nearest(wanted, own + elsewhere)
            if place is not None:
                found.append(_miss(module, "name", wanted, place))
        if code is not None:
            found += _inside(code, compared)
    return Search(tuple(dict.fromkeys(found)), tuple(compared.left_out))


def _miss(module: str, kind: str, wanted: str, place: Place, owner: str = "") -> NearMiss:
    return NearMiss(module, kind, wanted, place.name, place.file, place.line, place.cell, owner)


def _inside(code: _Module, compared: _Compared) -> list[NearMiss]:
    """Methods and parameters of the contract's classes and functions that look misspelt."""
    found = []
    for node in code.classes():
        if node.name not in CLASSES:
            continue
        methods = {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        places = compared.first(code.place(name, n.lineno) for name, n in methods.items())
        if CONSTRUCTOR not in methods:
            place = nearest(CONSTRUCTOR, places)
            if place is not None:
                found.append(_miss(code.module, "method", CONSTRUCTOR, place, node.name))
        if not any(name in methods for name in FORWARD):
            best = [(w, p) for w in FORWARD if (p := nearest(w, places)) is not None]
            if best:
                found.append(_miss(code.module, "method", best[0][0], best[0][1], node.name))
        if CONSTRUCTOR in methods:
            found += _parameters(code, methods[CONSTRUCTOR], node.name, compared, skip_first=True)
    for function in code.functions():
        if function.name in PARAMETERS:
            found += _parameters(code, function, function.name, compared)
    return found


def _parameters(
    code: _Module,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: str,
    compared: _Compared,
    skip_first: bool = False,
) -> list[NearMiss]:
    args = function.args
    if args.kwarg is not None:
        return []  # **kwargs takes any keyword
    given = args.posonlyargs + args.args + args.kwonlyargs
    given = given[1:] if skip_first else given
    names = {a.arg for a in given}
    places = compared.first(code.place(a.arg, a.lineno) for a in given)
    found = []
    for wanted in PARAMETERS[owner]:
        if wanted not in names and (place := nearest(wanted, [p for p in places if p.name not in PARAMETERS[owner]])):
            found.append(_miss(code.module, "keyword", wanted, place, owner))
    return found
