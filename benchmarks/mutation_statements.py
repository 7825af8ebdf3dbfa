"""Mutation operators on whole statements: delete one, swap two neighbours, discard a call's result."""

from __future__ import annotations

import ast

from mutation_source import Place, Source, _call_name, _unbinds


def drops(src: Source):
    """Delete a statement."""
    for statement, place in src.statements():
        if isinstance(statement, ast.Return) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        ):
            continue
        if _unbinds(place):
            label = None
        elif "masked" in place.checkpoints:
            label = "mask-not-applied"
        elif "output" in place.checkpoints:
            label = "out-proj-missing"
        else:
            label = None
        indent = " " * statement.col_offset
        new = [indent + "pass\n"] + ["\n"] * (statement.end_lineno - statement.lineno)
        yield (
            "drop",
            f"delete line {statement.lineno}",
            src.replace_lines(statement.lineno, statement.end_lineno, new),
            place,
            label,
        )


def _creates_parameter(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.targets[0], ast.Attribute)
        and any(_call_name(n) in ("Linear", "Parameter") for n in ast.walk(statement.value))
    )


def reorders(src: Source):
    """Swap two neighbouring one-line statements."""
    for statement, place in src.statements():
        body = place.body
        index = body.index(statement)
        if index + 1 >= len(body):
            continue
        following = body[index + 1]
        if (
            statement.lineno != statement.end_lineno
            or following.lineno != following.end_lineno
            or not isinstance(following, (ast.Assign, ast.Expr))
            or isinstance(statement, ast.Return)
        ):
            continue
        label = (
            "wrong-init"
            if place.function.name == "__init__" and _creates_parameter(statement) and _creates_parameter(following)
            else None
        )
        first, second = src.lines[statement.lineno - 1], src.lines[following.lineno - 1]
        text = src.replace_lines(
            statement.lineno, following.lineno, [second] + src.lines[statement.lineno : following.lineno - 1] + [first]
        )
        yield (
            "reorder",
            f"swap lines {statement.lineno} and {following.lineno}",
            text,
            place,
            label,
            frozenset({statement.lineno, following.lineno}),
        )


def _discard_label(place: Place, call: ast.Call | None = None) -> str | None:
    if call is not None and _call_name(call) in ("transpose", "permute") and "context" in place.checkpoints:
        return "heads-merged-wrong"  # the heads merged back without moving them next to head_dim
    if "masked" in place.checkpoints:
        return "mask-not-applied"
    if "output" in place.checkpoints:
        return "out-proj-missing"
    if "weights" in place.checkpoints:
        return "uses-scores-not-weights"  # the weights stay the scores they were computed from
    return None


def discards(src: Source):
    """Throw a call's result away: `x = f(x, ...)` -> `f(x, ...)`, `y = f(x)` -> `f(x); y = x`,
    and an in-place `x.op_(...)` -> `x.op(...)`."""
    for statement, place in src.statements():
        if statement.lineno != statement.end_lineno:
            continue
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Call)
        ):
            call = statement.value
            target = statement.targets[0].id
            receiver = (
                call.func.value
                if isinstance(call.func, ast.Attribute)
                and not (isinstance(call.func.value, ast.Name) and call.func.value.id in ("torch", "F", "nn", "self"))
                else None
            )
            source = receiver if receiver is not None else (call.args[0] if call.args else None)
            if source is None:
                continue
            kept = ast.unparse(source)
            text = ast.unparse(call) if kept == target else f"{ast.unparse(call)}; {target} = {kept}"
            yield (
                "discard",
                f"result of line {statement.lineno} discarded",
                src.replace(statement, text),
                place,
                _discard_label(place, call) if src.module == "sec3_6_multi_head_attention" else _discard_label(place),
            )
        elif (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
        ):
            name = statement.value.func.attr
            if name.endswith("_") and not name.startswith("_") and name != "copy_":
                func = ast.Attribute(statement.value.func.value, name[:-1], ast.Load())
                yield (
                    "discard",
                    f"{name} -> {name[:-1]} (result discarded)",
                    src.replace(statement.value.func, ast.unparse(func)),
                    place,
                    _discard_label(place),
                )
