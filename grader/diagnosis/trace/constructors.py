"""How a student's constructors differ from the reference's, from their traces: the tensors each
statement of a constructor creates (`init_groups`), the first statement where the student's create
other ones (`init_difference`: other sizes, biases, order, distribution, or extra tensors after the
reference's), the constructor line that created a parameter (`parameter_origin`) and the line that
built the first module (`built_at`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from grader.diagnosis.trace.graph import Node, Op, Site, Trace

PARAMETER_INIT = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "rand_like",
        "randn_like",
        "empty",
        "kaiming_uniform_",
        "kaiming_normal_",
        "uniform_",
        "normal_",
        "xavier_uniform_",
        "xavier_normal_",
        "trunc_normal_",
        "orthogonal_",
    }
)
RANDOM_INIT = PARAMETER_INIT | {"zeros", "ones", "full", "eye", "triu", "tril", "arange"}


def _signature(trace: Trace, op: Op) -> tuple:
    return (op.name, tuple(trace.nodes[out].shape for out in op.outputs))


@dataclass(frozen=True)
class InitDifference:
    """How a constructor differs from the reference's, and the first statement where it does.

    kind: "sizes" (other shapes: other dimensions, heads or context length), "bias" (biases created
    or left out), "order" (the same parameters created in another order), "kind" (another
    distribution or initialisation), "extra" (the reference's tensors, made as it makes them, and
    more after them: a layer of the student's own)."""

    kind: str
    site: Site
    outer: Site  # the outermost line of the code under test that led there (e.g. an exercise's call)


def init_groups(trace: Trace, call: int) -> list[tuple[Site, Site, tuple]]:
    """A constructor's statements, in order: (site, outermost site, what the statement creates)."""
    groups: list[tuple[Site, Site, list]] = []
    for op in trace.ops:
        if op.call != call or op.name not in RANDOM_INIT:
            continue
        site = _constructor_frame(op)  # the constructor's own line (nn.Linear's inner frames are torch's)
        if groups and groups[-1][0] == site:
            groups[-1][2].append(_signature(trace, op))
        else:
            groups.append((site, op.stack[-1], [_signature(trace, op)]))
    return [(site, outer, tuple(signature)) for site, outer, signature in groups]


def init_calls(trace: Trace) -> list[int]:
    """Calls that build something (a constructor, or a function building a module): they create tensors."""
    return sorted(
        {
            op.call
            for op in trace.ops
            if op.name in RANDOM_INIT and op.call >= 0 and any(frame.function == "__init__" for frame in op.stack)
        }
    )


def _shapes(groups: list[tuple[Site, Site, tuple]], biases: bool) -> list[tuple[int, ...]]:
    """The shapes of the tensors created: which ones for the weights and buffers (however many ops
    fill them), how many for the biases (one missing or added changes the count)."""
    shapes = [
        shape for _, _, signature in groups for _, found in signature for shape in found if (len(shape) == 1) == biases
    ]
    return sorted(shapes) if biases else sorted(set(shapes))


def init_difference(reference: Trace, student: Trace) -> InitDifference | None:
    """The first way (and statement) the student's constructors create other tensors than the reference's."""
    for ref_call, st_call in zip(init_calls(reference), init_calls(student)):
        want, got = init_groups(reference, ref_call), init_groups(student, st_call)
        if not got:
            continue
        difference = _difference(want, got, lambda signature: signature)
        if difference is None:  # the same statements, one for one: the first whose values differ
            other = _other_values(reference, ref_call, student, st_call)
            if other is not None:
                return InitDifference("order", other[0], other[1])
            continue
        site, outer = difference
        extra = _appended(want, got)
        if extra is not None:
            return InitDifference("extra", extra[0], extra[1])
        if _shapes(want, False) != _shapes(got, False):
            return InitDifference("sizes", site, outer)
        if _shapes(want, True) != _shapes(got, True):
            return InitDifference("bias", site, outer)
        # order and kind: the parameters only (a mask made another way is the masks' business)
        parameters = lambda signature: tuple(item for item in signature if item[0] in PARAMETER_INIT)  # noqa: E731
        if _difference([g for g in want if parameters(g[2])], [g for g in got if parameters(g[2])], parameters) is None:
            continue
        names = lambda groups: sorted(n for _, _, sig in groups for n, _ in sig if n in PARAMETER_INIT)  # noqa: E731
        return InitDifference("order" if names(want) == names(got) else "kind", site, outer)
    return None


def _other_values(reference: Trace, ref_call: int, student: Trace, st_call: int) -> tuple[Site, Site] | None:
    """Constructors that create tensors of the same kinds and shapes in the same order (the random
    generator draws the same numbers, run after run): the student's first parameter-creating
    statement whose tensor holds other values than the reference's at the same place (two layers of
    the same size created in another order), if the student's tensors are the reference's, reordered."""
    ours, theirs = _created(reference, ref_call), _created(student, st_call)
    if len(ours) != len(theirs):
        return None
    for (_, _, want), (site, outer, got) in zip(ours, theirs):
        if want.shape == got.shape and not torch.equal(want, got):
            reordered = any(w.shape == got.shape and torch.equal(w, got) for _, _, w in ours)
            return (site, outer) if reordered else None
    return None


def _created(trace: Trace, call: int) -> list[tuple[Site, Site, torch.Tensor]]:
    """The parameters a constructor call creates with recorded values, in order: (site, outer, value)."""
    found = []
    for op in trace.ops:
        if op.call == call and op.name in PARAMETER_INIT and op.outputs:
            value = trace.nodes[op.outputs[0]].value
            if value is not None:
                found.append((_constructor_frame(op), op.stack[-1], value))
    return found


def _appended(want: list, got: list) -> tuple[Site, Site] | None:
    """The student's first statement after every tensor the reference creates, created the same way
    and in the same order: what the student creates besides (an extra layer), if anything."""
    theirs = [(site, outer, item) for site, outer, signature in got for item in signature]
    ours = [item for _, _, signature in want for item in signature]
    if len(theirs) <= len(ours) or [item for _, _, item in theirs[: len(ours)]] != ours:
        return None
    return theirs[len(ours)][0], theirs[len(ours)][1]


def _difference(want: list, got: list, key: Callable) -> tuple[Site, Site] | None:
    """The student's first statement where the two sequences of statements part: the first that
    creates other tensors than the reference's statement at the same place (what it creates
    departs there, whatever the later statements do)."""
    ours, theirs = [key(w[2]) for w in want], [key(g[2]) for g in got]
    if not got or ours == theirs:
        return None
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    first = min(first, len(got) - 1)
    return got[first][0], got[first][1]


def parameter_origin(trace: Trace, op: Op) -> Site | None:
    """The constructor line that created a parameter (a leaf input made by an earlier call) `op` uses."""
    for node in op.inputs:
        if trace.nodes[node].op >= 0:
            continue
        origin = node_origin(trace, node)
        if origin is not None and origin.call != op.call:
            return _constructor_frame(origin)
    return None


def _constructor_frame(op: Op) -> Site:
    for frame in op.stack:
        if frame.function == "__init__":
            return frame
    return op.stack[-1]


def constructed_at(trace: Trace) -> Site | None:
    """A line of the first constructor that created a tensor (its first such statement)."""
    calls = init_calls(trace)
    for op in trace.ops:
        if calls and op.call == calls[0] and op.name in RANDOM_INIT:
            return _constructor_frame(op)
    return None


def built_at(trace: Trace) -> Site | None:
    """The outermost line of the code under test that built the first module (e.g. an exercise's
    `return MultiHeadAttention(...)`)."""
    calls = init_calls(trace)
    for op in trace.ops:
        if calls and op.call == calls[0]:
            return op.stack[-1]
    return None


def node_origin(trace: Trace, node: int) -> Op | None:
    """The op that made a node's tensor: its producer, or for a leaf the producer of its origin (the
    same tensor, or failing that an earlier tensor with the same values: a buffer the probe converted)."""
    seen = 0
    while seen < 20:
        seen += 1
        current = trace.nodes[node]
        if current.op >= 0:
            return trace.ops[current.op]
        if current.origin is None:
            return _same_values(trace, current)
        node = current.origin
    return None


def _same_values(trace: Trace, leaf: Node) -> Op | None:
    if leaf.value is None or leaf.value.is_complex():
        return None
    for node in trace.nodes[: leaf.index]:
        if (
            node.op >= 0
            and node.value is not None
            and node.value.shape == leaf.value.shape
            and torch.equal(node.value.double(), leaf.value.double())
        ):
            return trace.ops[node.op]
    return None
