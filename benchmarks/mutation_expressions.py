"""Mutation operators inside expressions: a dim, a diagonal, triu/tril, a divisor or exponent,
arguments or attributes swapped, a transpose left out, another initialisation, constant or slice."""

from __future__ import annotations

import ast

from mutation_source import EXERCISE_BUILDERS, PROJECTION_ATTRIBUTES, Source, _call_name, _int


def _dim_argument(call: ast.Call) -> ast.AST | None:
    name = _call_name(call)
    for keyword in call.keywords:
        if keyword.arg == "dim":
            return keyword.value
    on_module = (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in ("torch", "F", "nn")
    )
    index = 1 if on_module or name == "cat" else 0
    return call.args[index] if len(call.args) > index else None


def dims(src: Source):
    """Change the dimension a softmax, sum or cat works along."""
    for node, place in src.places():
        name = _call_name(node)
        if not isinstance(node, ast.Call) or name not in ("softmax", "sum", "cat"):
            continue
        target = _dim_argument(node)
        value = _int(target)
        if value is None:
            continue
        if name == "softmax" or (name == "sum" and place.function.name == "softmax_naive"):
            label = "softmax-wrong-dim"
        elif name == "cat" and "concat" in place.checkpoints:
            label = "concat-wrong-dim"
        else:
            label = None
        for new in (-1, -2, 0, 1):
            if new != value:
                yield "dim", f"{name} dim={value} -> dim={new}", src.replace(target, repr(new)), place, label


def diagonals(src: Source):
    """Change the diagonal a triu or tril starts from (and triu <-> tril)."""
    for node, place in src.places():
        name = _call_name(node)
        if not isinstance(node, ast.Call) or name not in ("triu", "tril"):
            continue
        keyword = next((k for k in node.keywords if k.arg == "diagonal"), None)
        on_module = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
        positional = node.args[1] if on_module and len(node.args) > 1 else None
        target = keyword.value if keyword else positional
        value = _int(target) if target is not None else 0
        if value is None:
            continue
        hides_future = name == "triu"  # triu(..., 1) marks what is hidden, tril(...) what is kept
        for new in (value - 1, value + 1):
            if hides_future:
                label = "mask-includes-diagonal" if new <= 0 else None
            else:
                label = "mask-includes-diagonal" if new <= -1 else None
            if target is not None:
                text = src.replace(target, repr(new))
            else:
                changed = ast.Call(node.func, node.args, node.keywords + [ast.keyword("diagonal", ast.Constant(new))])
                text = src.replace(node, ast.unparse(changed))
            yield "diagonal", f"{name} diagonal={value} -> {new}", text, place, label
        other = "tril" if name == "triu" else "triu"
        if isinstance(node.func, ast.Attribute):
            func = ast.Attribute(node.func.value, other, ast.Load())
            yield "swap-call", f"{name} -> {other}", src.replace(node.func, ast.unparse(func)), place, "mask-inverted"


def _divisor_of(statement: ast.stmt):
    for node in ast.walk(statement):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            yield node


def scalings(src: Source):
    """Change a divisor or its exponent, or leave the division out."""
    for statement, place in src.statements():
        scaled = "scaled" in place.checkpoints
        for division in _divisor_of(statement):
            left = ast.unparse(division.left)
            left = f"({left})" if isinstance(division.left, ast.BinOp) else left
            dropped_label = (
                "missing-scaling"
                if scaled
                else "mask-after-softmax-unnormalized"
                if "renormalized" in place.checkpoints
                else None
            )
            yield (
                "drop-divisor",
                f"{ast.unparse(division)} -> {left}",
                src.replace(division, left),
                place,
                dropped_label,
            )
            times = ast.BinOp(division.left, ast.Mult(), division.right)
            yield (
                "divisor",
                "/ -> *",
                src.replace(division, ast.unparse(times)),
                place,
                "wrong-scaling" if scaled else None,
            )
            for node in ast.walk(division.right):
                if (
                    isinstance(node, ast.BinOp)
                    and isinstance(node.op, ast.Pow)
                    and isinstance(node.right, ast.Constant)
                ):
                    for new in (1, 0, -0.5):
                        label = ("missing-scaling" if new == 0 else "wrong-scaling") if scaled else None
                        yield (
                            "exponent",
                            f"**{node.right.value} -> **{new}",
                            src.replace(node.right, repr(new)),
                            place,
                            label,
                        )
                if isinstance(node, ast.Subscript) and _int(node.slice) is not None:
                    for new in (0, 1, -2):
                        if new != _int(node.slice):
                            yield (
                                "divisor",
                                f"[{_int(node.slice)}] -> [{new}]",
                                src.replace(node.slice, repr(new)),
                                place,
                                "wrong-scaling" if scaled else None,
                            )


def argument_swaps(src: Source):
    """Swap two neighbouring positional arguments, or the operands of @."""
    for node, place in src.places():
        builder = src.module in EXERCISE_BUILDERS and _call_name(node) in (
            "MultiHeadAttention",
            "MultiHeadAttentionWrapper",
        )
        if (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            for i in range(min(len(node.args) - 1, 3)):
                a, b = node.args[i], node.args[i + 1]
                if ast.unparse(a) == ast.unparse(b):
                    continue
                args = list(node.args)
                args[i], args[i + 1] = b, a
                yield (
                    "swap-args",
                    f"{_call_name(node)} arguments {i} and {i + 1}",
                    src.replace(node, ast.unparse(ast.Call(node.func, args, node.keywords))),
                    place,
                    "wrong-config" if builder else None,
                )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield (
                "swap-args",
                "operands of @",
                src.replace(node, ast.unparse(ast.BinOp(node.right, node.op, node.left))),
                place,
                None,
            )


def attribute_swaps(src: Source):
    """Use W_key where W_query is used, and so on."""
    for node, place in src.places():
        if not isinstance(node, ast.Attribute) or node.attr not in PROJECTION_ATTRIBUTES:
            continue
        # in Exercise 3.1 a matrix copied to or from the wrong one; elsewhere (one attribute renamed)
        # a projection used twice or a parameter never created: no misconception of the catalogue
        label = "weights-swapped" if src.module == "exercise3_1_weight_transfer" else None
        for other in PROJECTION_ATTRIBUTES:
            if other != node.attr:
                changed = ast.Attribute(node.value, other, node.ctx)
                yield "swap-attrs", f"{node.attr} -> {other}", src.replace(node, ast.unparse(changed)), place, label


def untransposes(src: Source):
    """Leave a transpose out."""
    for node, place in src.places():
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            receiver = node.value
        elif (
            isinstance(node, ast.Call)
            and _call_name(node) in ("transpose", "permute")
            and isinstance(node.func, ast.Attribute)
        ):
            receiver = node.func.value
        else:
            continue
        if src.module == "exercise3_1_weight_transfer":
            label = "weights-not-transposed"
        elif "context" in place.checkpoints and src.module == "sec3_6_multi_head_attention":
            label = "heads-merged-wrong"  # the heads merged back without moving them next to head_dim
        else:
            label = None
        text = ast.unparse(receiver)
        text = f"({text})" if isinstance(receiver, ast.BinOp) else text
        yield "untranspose", f"{ast.unparse(node)} -> {text}", src.replace(node, text), place, label


def init_calls(src: Source):
    """Another initialisation: torch.rand -> torch.randn, bias=qkv_bias -> True/False, ModuleList -> list."""
    for node, place in src.places():
        if isinstance(node, ast.Attribute) and node.attr == "rand" and place.function.name == "__init__":
            for other in ("randn", "ones"):
                yield (
                    "init-call",
                    f"torch.rand -> torch.{other}",
                    src.replace(node, ast.unparse(ast.Attribute(node.value, other, ast.Load()))),
                    place,
                    "wrong-init",
                )
        if (
            isinstance(node, ast.keyword)
            and node.arg == "bias"
            and isinstance(node.value, ast.Name)
            and node.value.id == "qkv_bias"
        ):
            for value in (False, True):
                yield (
                    "init-call",
                    f"bias=qkv_bias -> bias={value}",
                    src.replace(node.value, repr(value)),
                    place,
                    "qkv-bias-ignored",
                )
        if isinstance(node, ast.Call) and _call_name(node) == "ModuleList":
            yield "init-call", "nn.ModuleList -> list", src.replace(node.func, "list"), place, "heads-not-registered"


def constants(src: Source):
    """Another number where an exercise configures a module."""
    if src.module not in EXERCISE_BUILDERS:
        return
    for node, place in src.places():
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0:
            for new in sorted({node.value * 2, max(node.value // 2, 1), node.value + 1} - {node.value}):
                yield "constant", f"{node.value} -> {new}", src.replace(node, repr(new)), place, "wrong-config"


def slices(src: Source):
    """The mask used whole, or cut to the book's six tokens."""
    for node, place in src.places():
        if (
            not isinstance(node, ast.Subscript)
            or "mask" not in ast.unparse(node.value)
            or not isinstance(node.slice, ast.Tuple)
            or not all(isinstance(e, ast.Slice) for e in node.slice.elts)
        ):
            continue
        yield "slice", "mask not cut", src.replace(node, ast.unparse(node.value)), place, "mask-not-sliced"
        six = ast.Tuple([ast.Slice(None, ast.Constant(6), None) for _ in node.slice.elts], ast.Load())
        yield (
            "slice",
            "mask cut to 6 tokens",
            src.replace(node, ast.unparse(ast.Subscript(node.value, six, ast.Load()))),
            place,
            "hardcoded-shape",
        )
