"""Class constructors (`def __init__`) as source code, in a student's parsed module and in the
reference solutions: where the diagnosis reads the names a constructor assigns (`attributes`) and
the keywords it takes (`keywords`). How constructors differ in what they run: `constructors`."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import solutions
from grader.intake.parsing import parsed_once

SOLUTIONS_DIR = Path(solutions.__file__).resolve().parent


def constructors(tree: ast.Module) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef]]:
    """Every class of `tree` (nested ones after the module's own) with each `def __init__` of its body."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    yield node, item


def constructor_of(tree: ast.Module | None, cls: str) -> ast.FunctionDef | None:
    """The first `def __init__` of a class named `cls` in `tree`."""
    return next((init for node, init in constructors(tree) if node.name == cls), None) if tree is not None else None


@functools.cache
def reference_constructor(cls: str, module: str | None = None) -> ast.FunctionDef | None:
    """The reference's constructor of `cls`: in `module`, or in the first module that has one."""
    paths = [SOLUTIONS_DIR / f"{module}.py"] if module is not None else sorted(SOLUTIONS_DIR.glob("*.py"))
    for path in paths:
        init = constructor_of(parsed_once(path.read_text(encoding="utf-8")), cls) if path.is_file() else None
        if init is not None:
            return init
    return None
