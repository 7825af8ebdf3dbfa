"""Framework adapters: the same probes, run against code written for another framework.

A submission is on the PyTorch track (the default) or on the MindSpore track when its modules
need mindspore (exercise-api.md §4): an import that an `except ImportError` catches, or that runs
only where the package is found, is optional and does not count. Probes are written once, in PyTorch terms; for the
MindSpore track `mindspore_adapter` presents the student's MindSpore code to them as PyTorch-like
objects (Cells built and called in MindSpore, results handed back as plain torch tensors), so the
same probes, codec and hidden suites grade both tracks.

This package is copied into the sandbox: it imports only the standard library here, and torch and
mindspore in `mindspore_adapter` (imported only for the MindSpore track).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

PYTORCH = "pytorch"
MINDSPORE = "mindspore"
TRACKS = (PYTORCH, MINDSPORE)

# Probes whose outputs come from the framework's own random stream (the book's seeded runs): on
# the MindSpore track they are compared with the MindSpore reference's outputs (the CPU values of
# exercise-api.md §4), every other probe with the PyTorch reference's.
SEEDED_PROBES = frozenset(
    {
        "sec3_4_self_attention:v1_book_seed",
        "sec3_5_causal_attention:book_seed",
        "sec3_6_multi_head_attention:mha_book_seeded",
        "exercise3_2_two_dim_output:seeded_output",
        "exercise3_2_two_dim_output:seeded_own_classes",  # the same seeded run, with the student's own classes
    }
)

# a module that does not parse: only its unindented imports are known to be needed (on their own
# line: `\s` would also run over the blank lines after them)
_TOP_IMPORT_LINE = re.compile(r"^(?:import|from)[ \t\f]+(\w+)", re.M)
# what an `except` must catch to make the imports of its `try` optional
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# an `if` whose test calls one of these runs its body only where a package is found
_FINDERS = frozenset({"find_spec", "find_loader"})
_EXITS = frozenset({"exit", "quit", "_exit", "abort"})  # an `except` calling one of these does not carry on


def needs_mindspore(source: str) -> bool:
    """Whether a module cannot be imported without mindspore (`_needed`)."""
    return "mindspore" in _needed(source)


def _needed(source: str) -> set[str]:
    """The top-level packages a module cannot be imported without (absolute imports only): those it
    imports anywhere but in an optional place. Optional: the body (and `else`) of a `try` with an
    `except` that catches ImportError (or something broader) and carries on (no `raise`, no
    `sys.exit()`); both branches of an `if` that asks whether a package is there (`find_spec(...)`,
    `sys.modules`, `TYPE_CHECKING`, or a name such an `except` sets: `HAS_MINDSPORE = False`,
    `ms = None`); the body of `if __name__ == "__main__"`."""
    from grader.intake.parsing import parsed  # the trusted side only: the sandbox's copy of the kit has no intake

    tree = parsed(source)
    if tree is None:  # (or too long to be parsed in the trusted process); "\r" ends a line too
        return {
            unicodedata.normalize("NFKC", match.group(1))
            for match in _TOP_IMPORT_LINE.finditer(source.replace("\r", "\n"))
        }
    flags = _absence_flags(tree)
    names: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]  # (statement, optional); no recursion
    while stack:
        node, optional = stack.pop()
        if isinstance(node, ast.Import) and not optional:
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not optional and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, _TRY) and any(_tolerates_absence(handler) for handler in node.handlers):
            stack += [(child, True) for child in node.body + node.orelse]
            stack += [(child, optional) for child in node.handlers + node.finalbody]
        elif isinstance(node, ast.If) and _asks_presence(node.test, flags):
            stack += [(child, True) for child in node.body + node.orelse]
        elif isinstance(node, ast.If) and _is_main(node.test):  # never runs when the grader imports it
            stack += [(child, True) for child in node.body] + [(child, optional) for child in node.orelse]
        else:
            stack += [(child, optional) for child in ast.iter_child_nodes(node) if isinstance(child, _BLOCKS)]
    return names


_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)  # where imports are (never in expressions)


def _name(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _tolerates_absence(handler: ast.ExceptHandler) -> bool:
    """An `except` that catches a failed import and carries on (no `raise` or `exit()` of its own)."""
    caught = handler.type
    types = [] if caught is None else caught.elts if isinstance(caught, ast.Tuple) else [caught]
    catches = caught is None or any(_name(item) in _IMPORT_ERRORS for item in types)
    return catches and not any(_stops(statement) for statement in handler.body)


def _stops(statement: ast.stmt) -> bool:
    """`raise ...`, or a call of `exit()` or the like: the module does not carry on."""
    return (
        isinstance(statement, ast.Raise)
        or isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and _name(statement.value.func) in _EXITS
    )


def _is_main(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(_name(side) == "__name__" for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides
    )


def _absence_flags(tree: ast.AST) -> set[str]:
    """Names that an `except` tolerating a failed import sets (`HAS_MINDSPORE = False`): the
    handlers of a `try` that imports."""
    flags: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _TRY) or not any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body):
            continue
        for handler in filter(_tolerates_absence, node.handlers):
            for statement in handler.body:
                targets = (
                    statement.targets
                    if isinstance(statement, ast.Assign)
                    else [statement.target]
                    if isinstance(statement, ast.AnnAssign)
                    else []
                )
                flags |= {target.id for target in targets if isinstance(target, ast.Name)}
    return flags


def _asks_presence(test: ast.expr, flags: set[str]) -> bool:
    """Whether an `if` test asks whether a package is there."""
    for node in ast.walk(test):
        name = _name(node)
        if isinstance(node, ast.Call) and _name(node.func) in _FINDERS:
            return True
        if (
            name == "TYPE_CHECKING"
            or isinstance(node, ast.Name)
            and name in flags
            or name == "modules"
            and _name(getattr(node, "value", None)) == "sys"
        ):
            return True
    return False


def _may_name_mindspore(source: str) -> bool:
    """Whether the name can occur in the source's code (identifiers are NFKC-normalised by Python:
    `import ｍｉｎｄｓｐｏｒｅ` imports mindspore)."""
    return "mindspore" in (source if source.isascii() else unicodedata.normalize("NFKC", source))


def track_of(sources: Mapping[str, str]) -> str:
    """The track of a submission: MindSpore when more of its modules need mindspore than need
    torch without mindspore (`_needed`). A PyTorch submission with an `import mindspore` left over in
    one module stays on the PyTorch track; a port that also imports torch somewhere stays a port;
    an optional `try: import mindspore / except ImportError` decides nothing."""
    if not any(_may_name_mindspore(source) for source in sources.values()):
        return PYTORCH  # no module can import it (its imports are not even parsed)
    needed = [_needed(source) for source in sources.values()]
    mindspore = sum("mindspore" in names for names in needed)
    torch_only = sum("torch" in names and "mindspore" not in names for names in needed)
    return MINDSPORE if mindspore > torch_only else PYTORCH


def available(track: str) -> bool:
    """Whether this installation of the kit can run code of `track`: PyTorch always, MindSpore only
    with the `mindspore` extra (`make mindspore`)."""
    if track != MINDSPORE:
        return True
    try:
        return importlib.util.find_spec("mindspore") is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False


def namespace_for(track: str, ns: Any) -> Any:
    """The namespace the probes should see for code of `track` found in `ns`."""
    if track == MINDSPORE:
        return _mindspore_namespace()(ns)
    return ns


@functools.cache
def _mindspore_namespace() -> Any:
    from grader.frameworks.mindspore_adapter import MindSporeNamespace  # torch: not in grader.run

    return MindSporeNamespace


def bind_namespaces() -> None:
    """Every track's namespace imported now: in the warm fork server, before it hides the kit from
    the code under test (grader.sandbox.sealing), so that a child imports nothing of the kit."""
    _mindspore_namespace()
