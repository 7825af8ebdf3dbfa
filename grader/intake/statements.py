"""What each top-level statement of a notebook cell binds and reads, as Python would run it.

`cell_statements(code)` splits a cell's code into its top-level statements (statements that share a
line are one) and, for each, the names it binds at module level, the names it reads when it runs
(`now`: the right-hand side of an assignment, a class's bases and body, a function's decorators and
defaults), the names its functions read when they are called (`later`: the free names of every
function and method it defines, with Python's scoping: parameters and names assigned in a function
are its own), and the names whose attributes or items it changes (`CausalAttention.forward = ...`).
`grader.intake.recognition` follows these to find what a definition needs. It also records whether a
statement sets the random state when it runs (`torch.manual_seed(123)`), draws from it
(`torch.rand(2, 3)`, `nn.Linear(3, 2)`, whose weights are drawn), or holds functions that do when
called (a class whose `__init__` builds an `nn.Linear`), and whether it loops at top level: a
statement's value that depends on the random state is rebuilt with the seeding and drawing
statements Run All runs before it.

Standard library only (the student bundle ships a copy of intake/); a cell is parsed only within
the budget of `grader.intake.parsing`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from grader.intake.parsing import parsed


@dataclass(frozen=True)
class Statement:
    """One top-level statement (or several that share a line) of a cell: lines `first`..`last`
    (1-based, in the cell)."""

    first: int
    last: int
    binds: frozenset[str]
    defines: frozenset[str]  # bound by `def` or `class` (a definition, not a value)
    now: frozenset[str]
    later: frozenset[str]
    mutates: frozenset[str] = frozenset()
    imports: bool = False  # an import statement and nothing else
    imports_from: str = ""  # `from MODULE import ...`: MODULE
    opaque: bool = False  # not analysed (a cell that does not parse): binds what its lines define
    parts: int = 1  # statements on these lines (more than one share a line)
    modules: frozenset[str] = frozenset()  # the top-level packages it imports (`torch` of `torch.nn`)
    seeds: bool = False  # sets the random state when it runs (`torch.manual_seed(123)`)
    draws: bool = False  # draws from the random state when it runs (`torch.rand`, `nn.Linear(...)`)
    draws_later: bool = False  # its functions and methods set or draw from it when called
    loops: bool = False  # a `for` or `while` loop at top level (a demo that may run long)


@dataclass
class _Scope:
    loads: set[str] = field(default_factory=set)
    stores: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)  # global / nonlocal
    deferred: set[str] = field(default_factory=set)  # read by functions defined here, when called
    mutated: set[str] = field(default_factory=set)


def _parameters(args: ast.arguments) -> list[str]:
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _function_free(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function reads from outside itself when it runs."""
    scope = _Scope(stores=set(_parameters(node.args)))
    for part in node.body if isinstance(node.body, list) else [node.body]:
        _visit(part, scope)
    own = scope.stores - scope.declared
    return (scope.loads | scope.deferred | scope.declared) - own


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _visit_all(nodes: list, scope: _Scope) -> None:
    for node in nodes:
        if node is not None:
            _visit(node, scope)


_NAMING = (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping)


def _visit(node: ast.AST, scope: _Scope) -> None:
    if isinstance(node, ast.Name):
        (scope.loads if isinstance(node.ctx, ast.Load) else scope.stores).add(node.id)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        _visit_all(node.decorator_list + node.args.defaults + node.args.kw_defaults, scope)
        _visit_all([a.annotation for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs], scope)
        _visit_all([node.returns], scope)
        scope.stores.add(node.name)
        scope.deferred |= _function_free(node)
    elif isinstance(node, ast.Lambda):
        _visit_all(node.args.defaults + node.args.kw_defaults, scope)
        scope.deferred |= _function_free(node)
    elif isinstance(node, ast.ClassDef):
        _visit_all(node.decorator_list + node.bases + [k.value for k in node.keywords], scope)
        body = _Scope()
        _visit_all(node.body, body)
        scope.loads |= body.loads - body.stores
        scope.deferred |= body.deferred  # methods skip the class's own names
        scope.stores.add(node.name)
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = _Scope()
        for child in ast.iter_child_nodes(node):
            _visit(child, inner)
        scope.loads |= inner.loads - inner.stores
        scope.deferred |= inner.deferred
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        scope.declared.update(node.names)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            scope.stores.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
        root = _root(node)
        if root is not None:
            scope.mutated.add(root)
        for child in ast.iter_child_nodes(node):
            _visit(child, scope)
    else:
        for name in ("name", "rest"):  # except ... as name; match patterns
            value = getattr(node, name, None)
            if isinstance(value, str) and isinstance(node, _NAMING):
                scope.stores.add(value)
        for child in ast.iter_child_nodes(node):
            _visit(child, scope)


# Calls that set the random state, and calls that draw from it (by the called name's last part:
# `torch.manual_seed`, `np.random.seed`; `torch.rand`, `nn.Linear`, whose weights are drawn when
# built, MindSpore's `nn.Dense`). `nn.Dropout(p)` draws nothing when built.
SEEDING = frozenset({"manual_seed", "manual_seed_all", "seed", "set_seed", "set_rng_state"})
DRAWING = frozenset(
    {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli"}
    | {"multinomial", "poisson", "uniform", "standard_normal", "random", "shuffle", "choice", "sample", "dropout"}
    | {"normal_", "uniform_", "random_", "bernoulli_", "exponential_", "kaiming_uniform_", "kaiming_normal_"}
    | {"xavier_uniform_", "xavier_normal_", "trunc_normal_", "orthogonal_"}
    | {"Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "Conv1d", "Conv2d", "Conv3d", "Dense"}
    | {"MultiheadAttention", "RNN", "LSTM", "GRU"}
)


@dataclass
class _Random:
    now: set[str] = field(default_factory=set)  # names of the random-state calls it makes when it runs
    later: set[str] = field(default_factory=set)  # ... that its functions make when called
    loops: bool = False


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _random(node: ast.AST, found: _Random, later: bool = False) -> None:
    """The random-state calls under `node` (a function's body runs later), and top-level loops."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        for part in node.args.defaults + node.args.kw_defaults + getattr(node, "decorator_list", []):
            if part is not None:
                _random(part, found, later)
        for part in node.body if isinstance(node.body, list) else [node.body]:
            _random(part, found, True)
        return
    if isinstance(node, ast.Call) and _called(node) in SEEDING | DRAWING:
        (found.later if later else found.now).add(str(_called(node)))
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and not later:
        found.loops = True
    for child in ast.iter_child_nodes(node):
        _random(child, found, later)


def _header(node: ast.stmt) -> list:
    """The parts of a statement that run before it binds its names (`x = x + 1` reads the old x)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return [node.value]
    if isinstance(node, ast.AugAssign):
        return [node.target, node.value]
    if isinstance(node, ast.ClassDef):
        return node.decorator_list + node.bases + [k.value for k in node.keywords]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.decorator_list + node.args.defaults + node.args.kw_defaults
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.iter]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in node.items]
    return []


def _loads(nodes: list) -> set[str]:
    scope = _Scope()
    _visit_all(nodes, scope)
    return scope.loads


def analysed(nodes: list[ast.stmt], first: int, last: int) -> Statement:
    scope = _Scope()
    _visit_all(nodes, scope)
    early = set().union(*(_loads(_header(n)) & scope.stores for n in nodes)) if nodes else set()
    defines = {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    imports = all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes)
    only = nodes[0] if len(nodes) == 1 else None
    source = only.module if isinstance(only, ast.ImportFrom) and only.module and not only.level else ""
    modules = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else alias.name
        for n in nodes
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for alias in n.names
    }
    chance = _Random()
    for node in nodes:
        _random(node, chance)
    return Statement(
        first,
        last,
        frozenset(scope.stores),
        frozenset(defines),
        frozenset((scope.loads - scope.stores) | early),
        frozenset(scope.deferred),
        frozenset(scope.mutated),
        imports,
        source,
        parts=len(nodes),
        modules=frozenset(m.split(".")[0] for m in modules),
        seeds=bool(chance.now & SEEDING),
        draws=bool(chance.now & DRAWING),
        draws_later=bool(chance.later),
        loops=chance.loops,
    )


def cell_statements(code: str) -> list[Statement] | None:
    """The top-level statements of a cell's code, in order; None when it does not parse (or is too
    long to parse here: `grader.intake.parsing`), or is nested too deeply to read (what parses depends
    on the recursion limit, which a library may have raised)."""
    tree = parsed(code)
    if tree is None:
        return None
    groups: list[tuple[list[ast.stmt], int, int]] = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None) or []
        first = min([node.lineno] + [d.lineno for d in decorators])
        last = node.end_lineno or node.lineno
        if groups and first <= groups[-1][2]:  # shares a line with the statement before
            nodes, start, end = groups[-1]
            groups[-1] = (nodes + [node], start, max(end, last))
        else:
            groups.append(([node], first, last))
    try:
        return [analysed(nodes, first, last) for nodes, first, last in groups]
    except (RecursionError, MemoryError):  # a tree deeper than this interpreter's recursion limit walks
        return None
