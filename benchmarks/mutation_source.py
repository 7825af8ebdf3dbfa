"""A solution module as the mutation operators see it: its text, its AST, the place of each
statement (its checkpoint declaration, function and statement list), and edits that keep every
line where it was."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader import sections  # the manifest of the sections

MODULES = list(sections.MODULES)
EXERCISE_BUILDERS = {s.module for s in sections.SECTIONS if s.configures}
CHECKPOINT = re.compile(r"\[checkpoint: ([\w=, ]+)\]")
PROJECTION_ATTRIBUTES = ("W_query", "W_key", "W_value")


def solution_sources() -> dict[str, str]:
    """The reference solutions as a student hands them in (sibling imports)."""
    return {
        m: re.sub(r"^from \.(\w+) import", r"from \1 import", (ROOT / "solutions" / f"{m}.py").read_text(), flags=re.M)
        for m in MODULES
    }


@dataclass(frozen=True)
class Mutant:
    module: str
    operator: str
    detail: str
    source: str  # the whole mutated module
    lines: frozenset[int]  # where the mistake is: what "located to the right line" means
    label: str | None
    span: tuple[int, int]  # first and last line touched (two mutants may combine if they do not overlap)
    function: str = ""  # the function it changes ("name:line"): two mutants of one function stack on one path


@dataclass
class Place:
    """What the labels may know about where a node is."""

    module: str
    function: ast.FunctionDef
    checkpoints: set[str]
    statement: ast.stmt
    body: list[ast.stmt]  # the statement list it belongs to


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


class Source:
    """One module's text with its AST, and edits that keep every line in place."""

    def __init__(self, module: str, text: str):
        self.module = module
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.tree = ast.parse(text)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line))

    def offset(self, line: int, column: int) -> int:
        return self.offsets[line - 1] + len(self.lines[line - 1].encode()[:column].decode(errors="ignore"))

    def replace(self, node: ast.AST, text: str) -> str | None:
        """The module with `node`'s text replaced (newlines added to keep the line count)."""
        start, end = self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)
        text += "\n" * (node.end_lineno - node.lineno)
        return self._valid(self.text[:start] + text + self.text[end:])

    def replace_lines(self, first: int, last: int, new: list[str]) -> str | None:
        lines = list(self.lines)
        lines[first - 1 : last] = new
        return self._valid("".join(lines))

    def _valid(self, text: str) -> str | None:
        try:
            ast.parse(text)
        except SyntaxError:
            return None
        return text if text.count("\n") == self.text.count("\n") else None

    def checkpoints(self, statement: ast.stmt) -> set[str]:
        names: set[str] = set()
        for number in range(statement.lineno, statement.end_lineno + 1):
            match = CHECKPOINT.search(self.lines[number - 1])
            if match:
                names |= {part.strip().rpartition("=")[2] for part in match.group(1).split(",")}
        return names

    def statements(self):
        """Every simple statement inside a function (with blocks looked into), with its Place."""
        for function in ast.walk(self.tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            todo = [function.body]
            while todo:
                body = todo.pop(0)
                for statement in body:
                    if isinstance(statement, (ast.With, ast.For, ast.If)):
                        todo.append(statement.body)
                        continue
                    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)):
                        yield statement, Place(self.module, function, self.checkpoints(statement), statement, body)

    def places(self):
        """Every node of those statements, with its Place."""
        for statement, place in self.statements():
            for node in ast.walk(statement):
                yield node, place


def _unbinds(place: Place) -> bool:
    """Removing the statement leaves a name unbound that later statements read."""
    statement, function, body = place.statement, place.function, place.body
    targets = {t.id for t in getattr(statement, "targets", []) if isinstance(t, ast.Name)}
    if not targets:
        return False
    arguments = {a.arg for a in function.args.args + function.args.kwonlyargs}
    index = body.index(statement)
    earlier = {
        n.id for s in body[:index] for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    later = {
        n.id for s in body[index + 1 :] for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return bool((targets & later) - earlier - arguments)
