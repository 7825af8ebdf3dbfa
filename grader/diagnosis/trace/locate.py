"""Where in the student's code a departure from the reference happens, from their trace's dataflow.

- `producer_site`: the line that computed a tensor;
- `mask_culprit`: for a masking op (masked_fill, where, +, *), the first op on the mask's way to it
  whose pattern is neither the causal mask nor its complement (triu(…, 0), tril(…, -1)...), else the
  masking op itself (a right pattern used the wrong way round);
- `dead_op`: an op of some kind whose result nobody used (a mask computed but never applied);
- `frontier`: the first real computation applied to a tensor (views and copies looked through);
- `scaling_op`: the multiplication or division by a number nearest upstream of a tensor.
How constructors differ (the statements that create other tensors) is `grader.diagnosis.trace.constructors`.
"""

from __future__ import annotations

from collections.abc import Callable, Set

import torch

from grader.diagnosis.trace.constructors import node_origin
from grader.diagnosis.trace.documents import LAYOUT_OPS, Node, Op, Ref, Site, Trace

# ops that create parameters (how they are drawn is the initialisation)

MASKING = frozenset(
    {
        "masked_fill",
        "masked_fill_",
        "where",
        "add",
        "add_",
        "__add__",
        "__radd__",
        "mul",
        "mul_",
        "__mul__",
        "__rmul__",
        "sub",
        "__sub__",
        "__rsub__",
        "scaled_dot_product_attention",
    }
)
CAUSAL = frozenset({"above-diagonal", "on-and-below-diagonal"})  # the reference's mask, either way round
SCALING = frozenset(
    {
        "mul",
        "mul_",
        "__mul__",
        "__rmul__",
        "div",
        "div_",
        "__truediv__",
        "__rtruediv__",
        "true_divide",
        "divide",
        "__itruediv__",
        "__imul__",
    }
)
MAX_UPSTREAM = 64  # nodes looked at upstream of a tensor


def scaling_op(trace: Trace, node: int) -> Op | None:
    """The op nearest upstream of `node` (its own producer first) that multiplies or divides by a
    number (a plain one, or a one-element tensor): where a scaling was applied, also when it was
    applied to the queries or keys before the scores were computed, or before a mask."""
    todo, seen = [node], set[int]()
    while todo and len(seen) < MAX_UPSTREAM:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        op = trace.producer(current)
        if op is None:
            continue
        if op.name in SCALING and any(_is_number(trace, a) for a in list(op.args) + list(op.kwargs.values())):
            return op
        todo += list(op.inputs)
    return None


def _is_number(trace: Trace, argument) -> bool:
    if type(argument) in (int, float):
        return True
    value = trace.nodes[argument.node].value if isinstance(argument, Ref) and argument.node >= 0 else None
    return value is not None and value.numel() == 1


def producer_site(trace: Trace, nodes: tuple[int, ...] | None) -> Site | None:
    if not nodes:
        return None
    op = trace.producer(nodes[0])
    return op.site if op is not None else None


def pattern(value: torch.Tensor | None) -> str | None:
    """Which triangle of a square matrix a mask marks (True, nonzero or −∞ entries), or None."""
    if value is None or value.dim() < 2 or value.shape[-1] != value.shape[-2] or value.shape[-1] < 2:
        return None
    if value.dtype == torch.bool:
        marked = value
    else:
        v = value.double()
        very_negative = v < -1e4  # −∞, −1e9, finfo.min: hidden
        if bool(very_negative.any()):
            marked = very_negative
        elif bool(((v == 0) | (v == 1)).all()):
            marked = v != 0
        else:
            return None
    while marked.dim() > 2:
        if not bool((marked == marked[:1]).all()):
            return None
        marked = marked[0]
    t = marked.shape[-1]
    ones = torch.ones(t, t, dtype=torch.bool)
    for name, candidate in (
        ("above-diagonal", torch.triu(ones, 1)),
        ("on-and-below-diagonal", torch.tril(ones)),
        ("on-and-above-diagonal", torch.triu(ones)),
        ("below-diagonal", torch.tril(ones, -1)),
        ("nothing", ~ones),
        ("everything", ones),
    ):
        if torch.equal(marked, candidate):
            return name
    return "other"


def _mask_argument(op: Op, trace: Trace) -> int | None:
    """The node of a masking op's mask: the argument that looks like a pattern."""
    candidates = [a.node for a in list(op.args) + list(op.kwargs.values()) if isinstance(a, Ref) and a.node >= 0]
    if op.name in ("masked_fill", "masked_fill_") and len(candidates) >= 2:
        return candidates[1]
    if op.name == "scaled_dot_product_attention":
        mask = op.kwargs.get("attn_mask", op.args[3] if len(op.args) > 3 else None)
        return mask.node if isinstance(mask, Ref) and mask.node >= 0 else None
    for node in candidates:
        if pattern(trace.nodes[node].value) not in (None, "other"):
            return node
    return None


def mask_culprit(trace: Trace, masking: Op | None) -> Site | None:
    """The line that gave the mask its wrong pattern (see the module docstring)."""
    if masking is None:
        return None
    node = _mask_argument(masking, trace)
    chain: list[Op] = []
    while node is not None and len(chain) < 30:
        op = node_origin(trace, node)
        if op is None:
            break
        chain.append(op)
        tensors = [i for i in op.inputs if pattern(trace.nodes[i].value) is not None or trace.nodes[i].op >= 0]
        node = tensors[0] if tensors else None
    for op in reversed(chain):  # from where the mask is made towards where it is used
        kinds = [pattern(trace.nodes[out].value) for out in op.outputs]
        if any(kind is not None and kind not in CAUSAL | {"everything", "nothing"} for kind in kinds):
            return op.site
    return masking.site


def dead_op(trace: Trace, names: Set[str], call: int | None = None) -> Op | None:
    """An op called `names` whose result nobody used, if any."""
    live = trace.live
    for op in trace.ops:
        if (
            op.name in names
            and (call is None or op.call == call)
            and op.outputs
            and not any(out in live for out in op.outputs)
        ):
            return op
    return None


def frontier(trace: Trace, nodes: tuple[int, ...] | None, known: Callable[[Node], bool] | None = None) -> Site | None:
    """The first op (views and copies looked through, and ops whose results the reference computed
    too when `known` says so) that computes something new from `nodes`."""
    if not nodes:
        return None
    live = trace.live
    todo, seen = [nodes[0]], set()
    while todo:
        node = todo.pop(0)
        if node in seen:
            continue
        seen.add(node)
        for op in trace.consumers(node):
            if not any(out in live for out in op.outputs):
                continue
            if op.name in LAYOUT_OPS or (
                known is not None and op.outputs and all(known(trace.nodes[out]) for out in op.outputs)
            ):
                todo += list(op.outputs)
            else:
                return op.site
    return None


def last_rearrangement(trace: Trace, nodes: tuple[int, ...] | None) -> Site | None:
    """The last view or transpose applied to `nodes` before something computes with them: where a
    rearrangement (splitting or merging heads) went wrong."""
    if not nodes:
        return None
    live = trace.live
    node, last = nodes[0], None
    for _ in range(50):
        following = [op for op in trace.consumers(node) if op.name in LAYOUT_OPS and any(o in live for o in op.outputs)]
        if not following:
            break
        last = following[0]
        node = last.outputs[0]
    return last.site if last is not None else None
