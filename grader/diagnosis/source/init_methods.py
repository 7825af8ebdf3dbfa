"""Class constructors (`def __init__`) as source code, in a student's parsed module and in the
reference solutions: where the diagnosis reads the names a constructor assigns (`attribute_names`) and
the keywords it takes (`keywords`). How constructors differ in what they run: `constructors`."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import solutions

SOLUTIONS_DIR = Path(solutions.__file__).resolve().parent


def constructors(tree: ast.Module, nested: bool = True) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef]]:
    """Every class of `tree` (nested ones after the module's own, unless not `nested`) with each
    `def __init__` of its body."""
    for node in ast.walk(tree) if nested else tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    yield node, item


def constructor_of(tree: ast.Module | None, cls: str, nested: bool = True) -> ast.FunctionDef | None:
    """The first `def __init__` of a class named `cls` in `tree`."""
    if tree is None:
        return None
    return next((init for node, init in constructors(tree, nested) if node.name == cls), None)


@functools.cache
def reference_constructor(cls: str, module: str | None = None) -> ast.FunctionDef | None:
    """The reference's constructor of a module-level class `cls`: in `module`, or in the first
    module that has one. The kit's own code: parsed whole (a syntax error is the kit's, and raised)."""
    paths = [SOLUTIONS_DIR / f"{module}.py"] if module is not None else sorted(SOLUTIONS_DIR.glob("*.py"))
    for path in (path for path in paths if path.is_file()):
        init = constructor_of(ast.parse(path.read_text(encoding="utf-8")), cls, nested=False)
        if init is not None:
            return init
    return None
