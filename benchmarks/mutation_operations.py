"""Mutation operators for mistakes met in real students' code: another operation on the scores, a
softmax over another set of entries, one projection used for the keys and the values, an extra layer
on the output, a keyword the contract does not name.

Each yields (kind, detail, source, place, label[, lines]) like the operators of mutation_expressions
and mutation_statements; every edit keeps each line where it was.
"""

from __future__ import annotations

import ast
import re

from mutation_source import EXERCISE_BUILDERS, Place, Source, _call_name


def score_operations(src: Source):
    """The scaled scores computed by another operation than a division by √d_k: a square root of
    the scores, a division by d_k itself, or a subtraction (which a softmax does not see)."""
    for statement, place in src.statements():
        if "scaled" not in place.checkpoints:
            continue
        for division in (n for n in ast.walk(statement) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)):
            base = _grouped(division.left)
            yield "operation", "scores ** 0.5", src.replace(division, f"{base} ** 0.5"), place, "wrong-scaling"
            right = division.right
            if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Pow):
                root = _grouped(right.left)
                yield "operation", "no square root", src.replace(division, f"{base} / {root}"), place, "wrong-scaling"
            yield "operation", "/ -> -", src.replace(division, f"{base} - {_grouped(right)}"), place, None


def _grouped(node: ast.AST) -> str:
    text = ast.unparse(node)
    return f"({text})" if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp)) else text


def normalisation_sets(src: Source):
    """A softmax over every entry at once (of the whole tensor, or of each matrix) instead of each row;
    a naive softmax divided by the sum of all its entries."""
    for node, place in src.places():
        if not isinstance(node, ast.Call) or "weights" not in place.checkpoints:
            continue
        name = _call_name(node)
        if name == "softmax" and node.args:
            x = _grouped(node.args[0])
            ways = [("softmax over all entries", f"torch.softmax({x}.flatten(), dim=0).view({x}.shape)")]
            if "for_query" not in place.function.name:  # its scores are one vector: no matrix to flatten
                ways.append(("softmax over each matrix", f"torch.softmax({x}.flatten(-2), dim=-1).view({x}.shape)"))
            for detail, text in ways:
                yield "normalisation", detail, src.replace(node, text), place, "softmax-wrong-dim"
        if name == "sum" and place.function.name == "softmax_naive" and isinstance(node.func, ast.Attribute):
            receiver = _grouped(node.func.value)
            yield (
                "normalisation",
                "sum of all entries",
                src.replace(node, f"{receiver}.sum()"),
                place,
                "softmax-wrong-dim",
            )


def projection_reuse(src: Source):
    """The keys and the values both computed with W_query."""
    if src.module == "exercise3_1_weight_transfer":
        return
    by_function: dict[int, dict[str, tuple[ast.stmt, Place]]] = {}
    for statement, place in src.statements():
        for name in ("keys", "values"):
            if name in place.checkpoints:
                by_function.setdefault(id(place.function), {})[name] = (statement, place)
    for found in by_function.values():
        if set(found) != {"keys", "values"}:
            continue
        text = src.text
        statements = sorted((s for s, _ in found.values()), key=lambda s: -s.lineno)
        for statement in statements:  # the later one first: offsets stay valid
            text = _renamed(Source(src.module, text), statement, {"W_key": "W_query", "W_value": "W_query"})
            if text is None:
                break
        if text is not None and text != src.text:
            lines = frozenset(s.lineno for s in statements)
            place = found["keys"][1]
            yield "reuse", "keys and values computed with W_query", text, place, None, lines


def _renamed(src: Source, statement: ast.stmt, names: dict[str, str]) -> str | None:
    """`statement` with each name or attribute in `names` renamed."""
    lines = list(src.lines)
    for number in range(statement.lineno, statement.end_lineno + 1):
        code, hash_, comment = lines[number - 1].partition("#")
        for old, new in names.items():
            code = re.sub(rf"\b{old}\b", new, code)
        lines[number - 1] = code + hash_ + comment
    return src._valid("".join(lines))


def _classes(src: Source):
    for node in src.tree.body:
        if isinstance(node, ast.ClassDef):
            functions = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            if "__init__" in functions and "forward" in functions:
                yield node, functions["__init__"], functions["forward"]


def extra_layers(src: Source):
    """A layer the reference does not have, created last in __init__ and applied to the output."""
    for cls, init, forward in _classes(src):
        returns = [s for s in forward.body if isinstance(s, ast.Return) and s.value is not None]
        if not returns or not init.body:
            continue
        arguments = {a.arg for a in init.args.args}
        size = "d_out * num_heads" if "Wrapper" in cls.name else "d_out"
        if not {"d_out"} <= arguments or ("num_heads" not in arguments and "Wrapper" in cls.name):
            continue
        back, last = returns[-1], init.body[-1]
        start, end = (
            src.offset(back.value.lineno, back.value.col_offset),
            src.offset(back.value.end_lineno, back.value.end_col_offset),
        )
        after_init = src.offset(last.end_lineno, last.end_col_offset)
        text = src.text
        text = text[:start] + "self.extra(" + text[start:end] + ")" + text[end:]  # the return comes after __init__
        text = text[:after_init] + f"; self.extra = nn.Linear({size}, {size})" + text[after_init:]
        text = src._valid(text)
        if text is None:
            continue
        place = Place(src.module, forward, set(), back, forward.body)
        lines = frozenset({back.lineno, last.end_lineno})  # where it is applied, and where it is created
        yield "extra-layer", f"an extra nn.Linear on {cls.name}'s output", text, place, None, lines


def wrong_keywords(src: Source):
    """A keyword the contract does not name: __init__'s `qkv_bias` called `bias`; an exercise's call
    of a 3.6 class given `bias=False` or `n_heads=`."""
    for _cls, init, _forward in _classes(src):
        if "qkv_bias" not in {a.arg for a in init.args.args}:
            continue
        lines = list(src.lines)
        for number in range(init.lineno, init.end_lineno + 1):
            code, hash_, comment = lines[number - 1].partition("#")
            lines[number - 1] = re.sub(r"\bqkv_bias\b", "bias", code) + hash_ + comment
        text = src._valid("".join(lines))
        place = Place(src.module, init, set(), init.body[0], init.body)
        yield "keyword", f"{_cls.name}.__init__ takes bias= for qkv_bias=", text, place, None, frozenset({init.lineno})
    if src.module not in EXERCISE_BUILDERS:
        return
    for node, place in src.places():
        if isinstance(node, ast.Call) and _call_name(node) in ("MultiHeadAttention", "MultiHeadAttentionWrapper"):
            extra = ast.Call(node.func, node.args, node.keywords + [ast.keyword("bias", ast.Constant(False))])
            yield "keyword", "bias=False given", src.replace(node, ast.unparse(extra)), place, None
            if any(k.arg == "num_heads" for k in node.keywords):
                renamed = [ast.keyword("n_heads" if k.arg == "num_heads" else k.arg, k.value) for k in node.keywords]
                call = ast.Call(node.func, node.args, renamed)
                yield "keyword", "num_heads= given as n_heads=", src.replace(node, ast.unparse(call)), place, None
