"""What the recogniser reports (mistakes, departures, a probe's finding) and the small helpers its
walk shares."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from grader.diagnosis.trace import locate
from grader.diagnosis.trace.constructors import InitDifference
from grader.diagnosis.trace.documents import Op, Ref, Site, Trace
from grader.diagnosis.walk.pipeline import Context, State

PROJECTIONS = ("queries", "keys", "values")
MASK_STAGES = ("mask", "masked", "masked_weights")
WRITES = frozenset({"copy_", "__setitem__", "set_", "fill_", "zero_"})
SKIPPED_OPS = {
    "masked": locate.MASKING - {"scaled_dot_product_attention"},
    "output": {"linear"},
    "scaled": {"div", "mul", "__truediv__", "true_divide"},
    "renormalized": {"div", "__truediv__"},
    "weights": {"softmax", "exp", "_softmax"},
}


@dataclass
class Mistake:
    stage: str  # the checkpoint where it shows
    misconception: str | None  # None: a mistake the catalogue has no name for
    key: str  # which alternative (e.g. "dim=-2", "hides-diagonal-too", "no-out-proj")
    site: Site | None
    inferred: bool = False  # not seen in the student's tensors, only in what was computed from them


@dataclass
class Departure:
    """The first checkpoint the student's computation never produced, and where it went instead."""

    stage: str
    site: Site | None
    forward: Site | None = None  # for the parameters: the op that uses them, if it is the forward that differs
    projection: str = ""  # for the parameters: the projection the walk did not find


@dataclass
class Finding:
    """What the recogniser saw on one probe."""

    mistakes: list[Mistake] = field(default_factory=list)
    departure: Departure | None = None
    construction: InitDifference | None = None  # constructors that create other tensors
    seeded: bool = False  # the probe uses the parameters as the constructor made them
    parameters: Site | None = None  # where the first projection's parameter was created
    built_at: Site | None = None  # the outermost line that constructed the first module
    constructed_at: Site | None = None  # a line of the first constructor that created a tensor
    failure: Mistake | None = None  # the op the code stopped at, when the probe raised

    @property
    def misconceptions(self) -> list[str]:
        seen: list[str] = []
        for mistake in self.mistakes:
            if mistake.misconception and mistake.misconception not in seen:
                seen.append(mistake.misconception)
        return seen


def _safely(fn, state: State, ctx: Context) -> torch.Tensor | None:
    """A stage's value from the student's own (perhaps ill-shaped) values; None when it cannot be computed."""
    try:
        value = fn(state, ctx)
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    return value if isinstance(value, torch.Tensor) else None


def _first_tensor(trace: Trace, op: Op) -> torch.Tensor | None:
    for argument in list(op.args) + list(op.kwargs.values()):
        if isinstance(argument, Ref) and argument.node >= 0:
            return trace.nodes[argument.node].value
    return None


def align_calls(reference: Trace, student: Trace) -> dict[int, int]:
    """The student's call that matches each of the reference's: the probe makes the same calls in
    the same order (imports left aside); a probe that stopped with an error made fewer."""
    ours = [call.index for call in reference.calls if call.function != "<module>"]
    theirs = [call.index for call in student.calls if call.function != "<module>"]
    return dict(zip(ours, theirs))


def rearranged(student: Trace, nodes: list[int] | tuple[int, ...]) -> set[int]:
    """`nodes` and whatever only rearranges them (views, copies), transitively."""
    todo, seen = list(nodes), set[int]()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        todo += [out for op in student.consumers(node) if op.name in locate.LAYOUT_OPS for out in op.outputs]
    return seen


def is_result(student: Trace, nodes: tuple[int, ...]) -> bool:
    """Whether a call of the student's returned `nodes` (or a rearrangement of them)."""
    results = {n for call in student.calls for n in call.result}
    return not results.isdisjoint(rearranged(student, nodes))


def call_nodes(trace: Trace, call: int) -> set[int]:
    nodes: set[int] = set()
    for op in trace.ops:
        if op.call == call:
            nodes.update(op.inputs)
            nodes.update(op.outputs)
    return nodes
