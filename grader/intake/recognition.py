"""A chapter notebook without `# module:` lines: each module's code recognised by the names the
contract requires (`grader.intake.contract.REQUIRED`), as running the notebook top to bottom binds them.

A module is made of the last definition of each of its required names (a `def` or `class`, or a
name bound to one: a value such as a demo's `attention_scores = inputs @ inputs.T` defines
nothing), and of every statement those need, transitively (`grader.intake.statements`): the helpers
and constants they read, the imports that bind what they use, an earlier definition a class
extends, a later statement that changes what they define (`CausalAttention.forward =
fixed_forward`). A name a definition reads when it runs (a base class, a decorator) is the one
bound before it; a name its functions read when they are called is the last one bound in the
notebook, as after Run All. Nothing else runs: demo and scratch cells (prints, the book's examples,
`torch.manual_seed`) are never part of a module unless a definition needs what they bind, so a
scratch cell that fails costs nothing, and one a definition needs that fails is reported at its
cell and line (the module fails to import). One exception, so that a value drawn from the random
state is the one Run All draws: a needed statement that draws from it (`W = torch.rand(3, 2)`,
`sa = SelfAttention_v2(3, 2)`) brings the last statement before it that sets the random state
(`torch.manual_seed(123)`) and the statements between that draw from it, with what they need,
each run guarded (`_random_state`: bounded, nothing from a loop or from another module).

Imports go first, in notebook order. A name required by an earlier module made from the same
notebook is imported from it (`from sec3_5_causal_attention import CausalAttention`), as the
`.py` files do, so that 3.6's wrapper builds the student's own 3.5 heads; any other statement is
copied into the module that needs it. An import of a module of the exercise (a cell that imports
"from sec3_5_causal_attention" the class an earlier cell defines) is kept as it is, except in that
module itself. A cell that does not parse is taken whole where it holds the last definition of a
required name (its syntax error is then that module's, at its line), with the notebook's imports.

Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from grader.intake.contract import ALL_NAMES, OWNER, REQUIRED
from grader.intake.statements import Statement
from grader.records import MODULES


@dataclass(frozen=True)
class Unit:
    """One statement of the notebook, in notebook order: its code cell's number, that cell's lines,
    the statement, and the module whose `# module:` cell holds it (None in an unmarked cell)."""

    cell: int
    lines: list[str]
    statement: Statement
    owner: str | None = None


@dataclass(frozen=True)
class Recognised:
    """A module recognised in a notebook: its lines to emit (units and generated imports)."""

    module: str
    names: tuple[str, ...]  # the required names it defines
    imports: dict[str, tuple[str, ...]]  # earlier module -> names imported from it
    units: tuple[int, ...]  # positions of the units it is made of, in notebook order
    preamble: tuple[int, ...] = ()  # imports added for a cell that does not parse (each guarded)
    guarded: tuple[int, ...] = ()  # units kept for the random state Run All leaves: each run guarded


def _earlier(a: str, b: str) -> bool:
    return MODULES.index(a) < MODULES.index(b)


class Notebook:
    """The units of one notebook and where each name is bound (positions in notebook order, so that
    finding a binding is a binary search: a notebook of many statements binding one name costs no
    more than its size times a logarithm)."""

    def __init__(self, units: list[Unit]):
        self.units = units
        self.bindings: dict[str, list[int]] = defaultdict(list)
        self.mutators: dict[str, list[int]] = defaultdict(list)
        for position, unit in enumerate(units):
            for name in unit.statement.binds:
                self.bindings[name].append(position)
            for name in unit.statement.mutates:
                self.mutators[name].append(position)
        self.marked_names = {n for u in units if u.owner is not None for n in u.statement.binds}
        self.seeding = [p for p, u in enumerate(units) if u.statement.seeds and u.owner is None]
        self._candidates: dict[tuple[str, str, bool], tuple[list[int], list[int]]] = {}

    def candidates(self, name: str, module: str, unmarked: bool) -> tuple[list[int], list[int]]:
        """(the statements that bind `name` for `module`, those of them that define it)."""
        key = (name, module, unmarked)
        if key not in self._candidates:
            found = [
                p
                for p in self.bindings.get(name, ())
                if self.units[p].statement.imports_from != module and not (unmarked and self.units[p].owner)
            ]
            self._candidates[key] = (found, [p for p in found if name in self.units[p].statement.defines])
        return self._candidates[key]

    def resolve(self, name: str, module: str, before: int | None = None, unmarked: bool = False) -> int | None:
        """The statement whose binding of `name` a use sees: the last before `before` (when given and
        there is one), else the last in the notebook; for a name the contract requires, its last
        definition (`def`, `class`) where there is one. An import of `name` from `module` itself
        never counts in `module`."""
        found, defining = self.candidates(name, module, unmarked)
        if not found:
            return None
        end = (bisect.bisect_left(found, before) if before is not None else 0) or len(found)
        if name in ALL_NAMES:
            last_def = bisect.bisect_right(defining, found[end - 1])
            if last_def:
                return defining[last_def - 1]
        return found[end - 1]

    def changing(self, position: int, name: str) -> list[int]:
        """The statements that change what `position` binds to `name` (`X.attr = ...`), up to the
        next statement that binds `name` again."""
        changes, bindings = self.mutators.get(name, []), self.bindings.get(name, [])
        following = bisect.bisect_right(bindings, position)
        stop = bindings[following] if following < len(bindings) else len(self.units)
        return changes[bisect.bisect_right(changes, position) : bisect.bisect_left(changes, stop)]

    def roots(self, module: str) -> dict[str, int]:
        """Required name -> the statement that last defines it (not by an import), in unmarked cells."""
        roots = {}
        for name in REQUIRED[module]:
            if name in self.marked_names:
                continue  # a `# module:` cell has it: the markers decide
            position = self.resolve(name, module, unmarked=True)
            if (
                position is not None
                and not self.units[position].statement.imports
                and self.defines(name, position, module)
            ):
                roots[name] = position
        return roots

    def last_seed(self, position: int) -> int | None:
        """The last unmarked statement before `position` that sets the random state."""
        index = bisect.bisect_left(self.seeding, position)
        return self.seeding[index - 1] if index else None

    def draws(self, position: int, module: str) -> bool:
        """Whether the statement draws from the random state when it runs: itself (`torch.rand`,
        `nn.Linear(3, 2)`), or by calling a function or class of the notebook that does when called
        (`SelfAttention_v2(3, 2)`, whose `__init__` builds `nn.Linear` layers)."""
        statement = self.units[position].statement
        if statement.draws:
            return True
        for name in statement.now:
            source = self.resolve(name, module, position)
            found = self.units[source].statement if source is not None else None
            if found is not None and name in found.defines and found.draws_later:
                return True
        return False

    def defines(self, name: str, position: int, module: str) -> bool:
        """Whether the statement at `position` binds `name` to a function or class: a `def` or
        `class`, a lambda, or a name bound to one (`attention_scores = my_scores`); a value
        (`attention_scores = inputs @ inputs.T`) defines nothing the contract asks for."""
        statement = self.units[position].statement
        if name in statement.defines:
            return True
        if statement.opaque:
            return False  # a cell that does not parse: only its `def` and `class` lines define
        if not statement.now:
            return bool(statement.later)  # a lambda: it reads its names when called
        for read in statement.now:
            source = self.resolve(read, module, position)
            if source is None or read not in self.units[source].statement.defines:
                return False
        return True


def recognise(units: list[Unit], taken: frozenset[str] | set[str]) -> list[Recognised]:
    """The modules the notebook's unmarked cells define, for every module without a `# module:`
    cell and not `taken` (given by a .py file or an earlier notebook)."""
    notebook = Notebook(units)
    marked = {u.owner for u in units if u.owner}
    roots = {m: notebook.roots(m) for m in MODULES if m not in marked and m not in taken}
    roots = {m: r for m, r in roots.items() if r}
    finals: dict[int, set[str]] = defaultdict(set)
    for found in roots.values():
        for name, position in found.items():
            finals[position].add(name)
    return [_closure(notebook, module, found, finals, set(roots)) for module, found in roots.items()]


MAX_RANDOM_CANDIDATES = 200  # seeding and drawing statements weighed for one module, at most
MAX_RANDOM_VISITS = 2000  # statements their needs may walk through, in all (then no more are weighed)


def _closure(
    notebook: Notebook, module: str, roots: dict[str, int], finals: dict[int, set[str]], made: set[str]
) -> Recognised:
    units = notebook.units

    def provider(position: int, name: str) -> str | None:
        """The earlier module that holds this binding of `name`, to import it from; None: copy it."""
        unit = units[position]
        if unit.statement.imports:
            return None
        if unit.owner is not None:
            return unit.owner if unit.owner != module and _earlier(unit.owner, module) else None
        owner = OWNER.get(name)
        if name in finals.get(position, ()) and owner in made and owner != module and _earlier(owner, module):
            return owner
        return None

    def gather(queue: list[int], known: set[int]) -> tuple[set[int], dict[str, set[str]]]:
        """The statements `queue` needs, transitively (not those `known` already), and the names to
        import from earlier modules."""
        selected: set[int] = set()
        imports: dict[str, set[str]] = defaultdict(set)

        def need(name: str, before: int | None) -> None:
            position = notebook.resolve(name, module, before)
            if position is None or position in selected or position in known:
                return
            source = provider(position, name)
            if source is not None:
                imports[source].add(name)
            else:
                queue.append(position)

        while queue:
            position = queue.pop()
            if position in selected or position in known:
                continue
            selected.add(position)
            statement = units[position].statement
            for name in statement.now:
                need(name, position)
            for name in statement.later:
                need(name, None)
            if statement.imports:
                continue
            for name in statement.binds:  # what changes the object this statement binds
                queue += notebook.changing(position, name)
        return selected, imports

    selected, imports = gather(sorted(roots.values()), set())
    guarded = _random_state(notebook, module, selected, gather)
    selected |= guarded
    preamble: tuple[int, ...] = ()
    if any(units[p].statement.opaque for p in selected):
        first_opaque = min(p for p in selected if units[p].statement.opaque)
        preamble = tuple(
            p for p in range(first_opaque) if units[p].statement.imports and p not in selected and not units[p].owner
        )
    return Recognised(
        module,
        tuple(n for n in REQUIRED[module] if n in roots),
        {
            source: tuple(sorted(names))
            for source, names in sorted(imports.items(), key=lambda kv: MODULES.index(kv[0]))
        },
        tuple(sorted(selected)),
        preamble,
        tuple(sorted(guarded)),
    )


def _random_state(
    notebook: Notebook,
    module: str,
    selected: set[int],
    gather: Callable[[list[int], set[int]], tuple[set[int], dict[str, set[str]]]],
) -> set[int]:
    """The statements Run All runs before a selected statement whose value depends on the random
    state (`W = torch.rand(3, 2)` after `torch.manual_seed(123)`): the last one that sets it and the
    ones after it that draw from it, with what they need. Each is kept only when it and what it
    needs stay in this module (nothing imported from an earlier one) and none loops at top level (a
    demo that may run long); they run guarded (a demo that fails costs nothing). At most
    MAX_RANDOM_CANDIDATES statements are weighed, their needs walking MAX_RANDOM_VISITS statements."""
    units = notebook.units
    added: set[int] = set()
    scanned = 0  # positions before this one were weighed already
    weighed = visited = 0
    for position in sorted(selected):
        statement = units[position].statement
        if statement.imports or statement.seeds or not notebook.draws(position, module):
            continue
        seed = notebook.last_seed(position)
        if seed is None:
            continue
        for candidate in range(max(seed, scanned), position):
            if candidate in selected or candidate in added or units[candidate].owner is not None:
                continue
            if candidate != seed and not notebook.draws(candidate, module):
                continue
            weighed += 1
            if weighed > MAX_RANDOM_CANDIDATES:
                return added
            found, imports = gather([candidate], selected | added)
            visited += len(found)
            if visited > MAX_RANDOM_VISITS:
                return added
            if not imports and not any(units[p].statement.loops or units[p].owner for p in found):
                added |= found
        scanned = max(scanned, position)
    return added
