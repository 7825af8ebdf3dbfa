"""Whether the code an error stopped in fixes a size in advance: the evidence `hardcoded-shape`
needs besides its telltale message (a view "invalid for input of size", a mask of 6 against 5
tokens). A view with its arguments swapped gives the same message without fixing any size: the
function must give a shape or a slice a number of 2 or more, or `context_length`, in place of a
size read from the input.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from grader.intake.parsing import parsed_once
from grader.records import TestOutcome

SHAPING = {"view", "reshape", "expand", "repeat", "unflatten", "new_zeros", "new_ones", "zeros", "ones", "triu", "tril"}


def _fixed(node: ast.AST) -> bool:
    """A number of 2 or more, or a name or attribute that says context_length."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value >= 2
    if isinstance(node, ast.Name):
        return "context" in node.id
    if isinstance(node, ast.Attribute):
        return "context" in node.attr
    return False


def fixed_size_line(outcome: TestOutcome, sources: Mapping[str, str]) -> int | None:
    """The line where the function the error stopped in gives a shaping call or a slice a fixed
    size (see the module's docstring): the error's own line, else the last such line before it (a
    mask cut to 6 tokens, then applied); None when there is none."""
    location = outcome.error.location if outcome.error is not None else None
    if location is None or not location.file.endswith(".py"):
        return None
    tree = parsed_once(sources.get(location.file.removesuffix(".py"), ""))
    functions = [
        node
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, ast.FunctionDef) and node.lineno <= location.line <= (node.end_lineno or node.lineno)
    ]
    if not functions:
        return None
    innermost = ast.walk(functions[-1])
    lines = {node.lineno for node in innermost if isinstance(node, (ast.Call, ast.Slice)) and _fixes(node)}
    if location.line in lines:
        return location.line
    before = [line for line in lines if line < location.line]
    return max(before) if before else min(lines) if lines else None


def _fixes(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        arguments = [*node.args, *(k.value for k in node.keywords)]
        shapes = [e for a in arguments for e in (a.elts if isinstance(a, (ast.Tuple, ast.List)) else [a])]
        return name in SHAPING and any(_fixed(a) for a in shapes)
    return isinstance(node, ast.Slice) and any(_fixed(part) for part in (node.lower, node.upper) if part is not None)
