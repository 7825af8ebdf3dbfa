"""Whether one probe's trace may stand for another's: the student's code cannot choose its lines.

Two probes share a trace (`Diagnoser.trace_plan`) when they run the same functions of the
reference. That says nothing of the student's code, which may take other lines for other inputs:
`if x.dtype == torch.float64:`, `if self.training:`, `if b > 3:`, a helper picked by a flag, a mask
built once and cached. The borrowing test would then be told the line (or checkpoint) of another
input's path. So a trace is shared only when the student's modules that the probes run (and the
submission's modules they import) contain, inside their functions, no construct that picks
between lines at run time:
- `if` (unless it only raises: a probe that takes it fails with an error, and errors never share),
  a conditional expression, `while`, `break`/`continue`, `try`, `match`, `and`/`or`, a
  comprehension's filter;
- a callable chosen at run time: `getattr`/`eval`/`exec`/`globals`/`vars`, a call of a subscript
  (`table[key](x)`), an index into a literal list, tuple or dict (`(f, g)[flag]`), a list, tuple,
  set or dict (anywhere in the module) that holds a lambda or one of the module's functions;
- a loop whose number of turns can be zero for some inputs and not others: any `for` or
  comprehension over something other than a name, an attribute or `range` of those (and `len`);
- a decorator other than `staticmethod`, `classmethod`, `property` (a cache skips the body).
A source that does not parse (or is too long to be parsed in the trusted process:
`grader.intake.parsing`) is never shared. Conservative by design: a branch-free submission
loses nothing (its probes run the same lines), any other has each probe traced on its own. Not
seen: a choice hidden in data (a list of functions built at run time and stored in a variable, a
loop over such a list), in operators a class of the student's overloads, or in state that one call
leaves for the next.

`uses_modules` tells whether the student's code uses another of the submission's modules at all (a
name of it in code, not only in an import): a test that relies on a broken earlier section is left
untraced only then (`Diagnoser.departs_where_it_relies`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping

from grader.intake.parsing import parsed
from grader.records import MODULES

CHOICES = (ast.IfExp, ast.While, ast.Break, ast.Continue, ast.Try, ast.Match, ast.BoolOp) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()
)
DYNAMIC = {"getattr", "eval", "exec", "__import__", "globals", "vars", "locals"}
PLAIN_DECORATORS = {"staticmethod", "classmethod", "property"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def same_lines_for_every_input(files: Iterable[str | None], sources: Mapping[str, str]) -> bool:
    """The student's code in `files` (the reference's file names, `x.py`) and the submission's
    modules they import cannot take other lines for other inputs (see the module's text)."""
    seen: set[str] = set()
    todo = [f.removesuffix(".py") for f in files if f]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        text = sources.get(module)
        if text is None:
            continue  # not the submission's: never the student's lines
        verdict = _verdict(text)
        if verdict is None:
            return False
        todo.extend(verdict)
    return True


def uses_modules(module: str, others: Iterable[str], sources: Mapping[str, str]) -> bool:
    """The student's `module` uses each of the submission's modules `others` (a name imported from
    it appears in code, not only in the import), directly or through submission modules it uses."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(_used(sources.get(current, "")))
    return set(others) <= seen


def _used(text: str) -> tuple[str, ...]:
    """The submission's modules whose imported names (or the module itself, imported as a name)
    a module's code uses; none when it does not parse (`parsed`)."""
    return _facts(text)[1]


def _verdict(text: str) -> tuple[str, ...] | None:
    """None when the module's functions can choose their lines; else the submission's modules it imports."""
    return _facts(text)[0]


@functools.lru_cache(maxsize=256)
def _facts(text: str) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """(`_verdict`, `_used`) of a module's source, from one parse (a trace plan asks both of most modules)."""
    tree = parsed(text)
    if tree is None:
        return None, ()
    try:
        verdict = _read(tree)
    except RecursionError:  # `range(range(...))` nested past the interpreter's limit
        verdict = None
    return verdict, _names_used(tree)


def _names_used(tree: ast.Module) -> tuple[str, ...]:
    """`_used` of a parsed module."""
    origin: dict[str, str] = {}  # local name -> the submission's module it comes from
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.split(".")[-1] if node.level else node.module
            if module in MODULES:
                origin.update((alias.asname or alias.name, module) for alias in node.names)
        elif isinstance(node, ast.Import):
            origin.update((alias.asname or alias.name, alias.name) for alias in node.names if alias.name in MODULES)
    return tuple(sorted({origin[name] for name in names if name in origin}))


def _read(tree: ast.Module) -> tuple[str, ...] | None:
    """`_verdict` of a parsed module, in one pass over its nodes: None when a function (or lambda)
    body, or a function's decorator, can pick its lines at run time, or a literal container holds
    a lambda or one of the module's functions (a table to pick from); else the submission's
    modules it imports."""
    functions: set[str] = set()
    table_names: set[str] = set()  # names held in literal containers: a table if one is a function
    imports: list[str] = []
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]  # (node, inside a function's body)
    while todo:
        node, inside = todo.pop()
        kind = type(node)  # (a set lookup or two per node: this walk is most of a submission's trace plan)
        if inside and kind in _MAY_CHOOSE and _chooses(node):
            return None
        if kind not in _NOTED:
            todo += [(child, inside) for child in _children(node)]
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            for item in node.values if isinstance(node, ast.Dict) else node.elts:
                if isinstance(item, ast.Lambda):
                    return None
                if isinstance(item, ast.Name):
                    table_names.add(item.id)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports.append(node.module.split(".")[-1] if node.level else node.module)
        elif isinstance(node, ast.Import):
            imports += [alias.name for alias in node.names]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
            if not all(_plain(decorator) for decorator in node.decorator_list):
                return None
        if isinstance(node, FUNCTIONS):
            body = node.body if isinstance(node.body, list) else [node.body]
            in_body = {id(statement) for statement in body}
            todo += [(child, inside or id(child) in in_body) for child in _children(node)]
        else:
            todo += [(child, inside) for child in _children(node)]
    if table_names & functions:
        return None
    return tuple(name for name in imports if name in MODULES)


# the kinds of node `_read` looks into (any other: only its children)
_NOTED = frozenset({ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ImportFrom, ast.Import, *FUNCTIONS})
_MAY_CHOOSE = frozenset({*CHOICES, ast.If, ast.comprehension, ast.For, ast.AsyncFor, ast.Call, ast.Subscript})


def _children(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes(node), as a list (without its two generators per node)."""
    children: list[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.AST)]
    return children


def _plain(decorator: ast.expr) -> bool:
    return (
        isinstance(decorator, ast.Name)
        and decorator.id in PLAIN_DECORATORS
        or isinstance(decorator, ast.Attribute)
        and decorator.attr in ("setter", "getter", "deleter")
    )


def _chooses(node: ast.AST) -> bool:
    if isinstance(node, CHOICES):
        return True
    if isinstance(node, ast.If):
        return bool(node.orelse) or not all(isinstance(statement, ast.Raise) for statement in node.body)
    if isinstance(node, ast.comprehension):
        return bool(node.ifs) or not _fixed_turns(node.iter)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return bool(node.orelse) or not _fixed_turns(node.iter)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Subscript) or isinstance(node.func, ast.Name) and node.func.id in DYNAMIC
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, (ast.List, ast.Tuple, ast.Dict)) and not isinstance(node.slice, ast.Constant)
    return False


def _fixed_turns(iterable: ast.expr) -> bool:
    """A loop over a name or an attribute (`self.heads`), or `range` of those: as many turns for
    every probe as the module was built with, never a choice made by a comparison."""
    if isinstance(iterable, (ast.Name, ast.Attribute)):
        return True
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id in ("range", "len")
        and not iterable.keywords
    ):
        return all(
            isinstance(arg, (ast.Name, ast.Attribute, ast.Constant)) or _fixed_turns(arg) for arg in iterable.args
        )
    return False
