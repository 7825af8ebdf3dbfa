"""The constructor line behind a check of parameter or buffer names (`SelfAttention_v1` without a
`W_query`, `W_key` created twice, no `mask` buffer): the probe reports the names, the trace says
which constructor made them, and the constructor's statements, read from the submission's source,
say which one assigns another name than the reference's at the same place.

The reference's names come in the order the reference's constructor of the same class assigns
them (`W_query`, `W_key`, `W_value`...: read from the solution's source); the student's statements
that assign one of the names either side uses (`self.W_key = ...`, `self.register_buffer("mask",
...)`, `setattr(self, "W_value", ...)`), in their order. The first statement whose name differs is
the line; a name missing at the end is the constructor's last statement.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping

from grader.diagnosis.source.init_methods import constructors, reference_constructor
from grader.diagnosis.source.quotes import frame
from grader.intake.parsing import parsed_once
from grader.probe_outputs import ProbeOutputs
from grader.records import StudentFrame, TestOutcome

NAME_KEYS = ("parameters", "buffers")
REGISTERS = {"register_buffer", "register_parameter", "add_module"}


def _attributes(value: object) -> list[str] | None:
    """The attribute names of a probe's list of names ("W_query.weight", or [name, shape] pairs)."""
    if not isinstance(value, list):
        return None
    names = [item[0] if isinstance(item, (list, tuple)) and item else item for item in value]
    if not all(isinstance(n, str) for n in names):
        return None
    return list(dict.fromkeys(str(n).split(".")[0] for n in names))


def differing_names(outcome: TestOutcome, student: ProbeOutputs, reference: ProbeOutputs) -> tuple[list, list] | None:
    """(the reference's names, the student's) of the first probe of the test whose names differ."""
    for probe in outcome.probes:
        got, want = student.outputs(probe) or {}, reference.outputs(probe) or {}
        for key in NAME_KEYS:
            theirs, ours = _attributes(got.get(key)), _attributes(want.get(key))
            if theirs is not None and ours is not None and theirs != ours:
                return ours, theirs
    return None


def _assigned(statement: ast.stmt) -> str | None:
    """The attribute of `self` a statement assigns or registers."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                return target.attr
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        first = call.args[1] if name == "setattr" and len(call.args) > 1 else call.args[0] if call.args else None
        if (
            (name in REGISTERS or name == "setattr")
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
        ):
            return first.value
    return None


def _constructor(tree: ast.Module, line: int) -> tuple[str, ast.FunctionDef] | None:
    """The class around `line` and its `__init__`, if `line` is in it."""
    for node, init in constructors(tree):
        if init.lineno <= line <= (init.end_lineno or init.lineno):
            return node.name, init
    return None


def class_at(file: str, line: int, sources: Mapping[str, str]) -> str | None:
    """The class whose `def __init__` holds `line` of `file`."""
    tree = parsed_once(sources.get(file.removesuffix(".py"), "")) if file.endswith(".py") else None
    found = _constructor(tree, line) if tree is not None else None
    return found[0] if found is not None else None


def constructor_key(file: str, line: int, sources: Mapping[str, str]) -> tuple[str, int] | None:
    """The constructor (file, line of its `def __init__`) that `line` of `file` belongs to."""
    tree = parsed_once(sources.get(file.removesuffix(".py"), "")) if file.endswith(".py") else None
    found = _constructor(tree, line) if tree is not None else None
    return (file, found[1].lineno) if found is not None else None


def _assignments(init: ast.FunctionDef, relevant: set[str]) -> list[tuple[int, str]]:
    statements = [s for s in ast.walk(init) if isinstance(s, ast.stmt) and s is not init]
    return sorted((s.lineno, name) for s in statements if (name := _assigned(s)) in relevant)


@functools.cache
def _reference_order(module: str, cls: str) -> tuple[str, ...]:
    """The names the reference's constructor of `cls` assigns, in order."""
    init = reference_constructor(cls, module)
    return tuple(name for _, name in _assignments(init, _AnyName())) if init is not None else ()


class _AnyName(set):
    def __contains__(self, item: object) -> bool:
        return isinstance(item, str)


def names_line(within: StudentFrame, names: tuple[list, list], sources: Mapping[str, str]) -> int | None:
    """The line of the constructor around `within` that assigns another name than the reference's
    (see the module's docstring)."""
    module = within.file.removesuffix(".py")
    tree = parsed_once(sources.get(module, "")) if within.file.endswith(".py") else None
    found = _constructor(tree, within.line) if tree is not None else None
    if found is None:
        return None
    cls, init = found
    relevant = set(names[0]) | set(names[1])
    ours = [name for name in _reference_order(module, cls) if name in relevant]
    assigned = _assignments(init, relevant)
    if not ours:
        return None
    for (line, name), want in zip(assigned, ours):
        if name != want:
            return line
    if len(assigned) > len(ours):
        return assigned[len(ours)][0]
    return init.body[-1].lineno if len(assigned) < len(ours) else None


def missing_attribute_line(outcome: TestOutcome, sources: Mapping[str, str]) -> StudentFrame | None:
    """For a check that stopped because the student's object lacks an attribute of the contract
    (`W_query`, or `heads.0.W_query` of a wrapper's head): the constructor's statement that assigns,
    at the reference's place of that attribute, another name (`self.W_q = ...`); else the class's
    `def __init__` line. The class is looked for in the test's module, then in the others."""
    error = outcome.error
    params = (error.params or {}) if error is not None else {}
    if error is None or error.key not in ("contract.missing-object-attribute", "contract.missing-object-attribute-of"):
        return None
    if error.key.endswith("-of"):
        cls, wanted = str(params.get("got", "")), str(params.get("expected", ""))
    else:
        cls, wanted = str(params.get("name", "")), str(params.get("path", "")).split(".")[0]
    for module in [outcome.module] + [m for m in sources if m != outcome.module]:
        tree = parsed_once(sources.get(module, ""))
        init = next((i for node, i in constructors(tree) if node.name == cls), None) if tree is not None else None
        if init is None:
            continue
        reference = reference_constructor(cls)
        order = [name for _, name in _assignments(reference, _AnyName())] if reference is not None else []
        theirs = _assignments(init, _AnyName())
        line = theirs[order.index(wanted)][0] if wanted in order and order.index(wanted) < len(theirs) else init.lineno
        return frame(f"{module}.py", line, "__init__", sources)
    return None
