"""Wrong values the pipeline's known alternatives do not list, read off the student's own tensors
for the walk (`walker`): the number the scores were divided by (`fitted_scaling`), and a mask of the
student's own making (`fitted_mask`), named by what it hides."""

from __future__ import annotations

import torch

from grader.diagnosis.trace import locate
from grader.diagnosis.trace.constructors import PARAMETER_INIT, node_origin
from grader.diagnosis.trace.documents import Trace
from grader.diagnosis.walk.findings import Mistake
from grader.diagnosis.walk.pipeline import Alternative, mask_misconception
from grader.diagnosis.walk.progress import Nodes, Progress, Step
from grader.diagnosis.walk.search import Search


def fitted_scaling(
    search: Search, progress: Progress, index: int, name: str, strictly: bool = False
) -> tuple[Alternative, torch.Tensor, Nodes] | None:
    """Scores divided by some other number: the divisor read off the student's own tensor. Returns
    the wrong way as an alternative of its own, the value and the nodes holding it. No scaling at
    all is believed as `Search.confirmed` says (`strictly`: the student computed the right value)."""
    state, ctx = progress.state, search.ctx
    base = state.get("masked", state.get("scores"))
    if base is None or ctx.divisor is None:
        return None
    for divisor in search.finder.divisors(base):
        if abs(divisor / ctx.divisor - 1) < 1e-3:
            continue
        value = base / divisor
        unscaled = abs(divisor - 1) < 1e-3
        nodes = search.find(name, value, progress.nodes, inputs_too=unscaled)
        if nodes is None:
            continue
        alternative = Alternative(
            "unscaled" if unscaled else f"divided-by-{divisor:.4g}",
            "missing-scaling" if unscaled else "wrong-scaling",
            lambda s, c: None,
            skip=unscaled,
        )
        if unscaled and not search.confirmed(index, dict(state, **{name: value}), nodes, progress.nodes, strictly):
            continue
        return alternative, value, nodes
    return None


def own_masks(student: Trace, size: int) -> list[torch.Tensor]:
    """The masks the student's code made: square bool, 0/1 or −∞ patterns, cut to `size`, both ways round."""
    found: list[torch.Tensor] = []
    for node in student.nodes:
        value = node.value
        if (
            value is None
            or locate.pattern(value) in (None, "nothing", "everything")
            or value.shape[-1] < size
            or (node.op < 0 and node.origin is None)
        ):
            continue
        origin = node_origin(student, node.index)
        if origin is None or origin.name in PARAMETER_INIT:
            continue  # a mask the student's own code made (not, say, an identity weight)
        while value.dim() > 2:
            value = value[0]
        marked = (
            value
            if value.dtype == torch.bool
            else (value.double() < -1e4)
            if bool((value.double() < -1e4).any())
            else value != 0
        )
        marked = marked[:size, :size]
        for pattern in (marked, ~marked):
            if not any(torch.equal(pattern, seen) for seen in found):
                found.append(pattern)
    return found


def fitted_mask(search: Search, progress: Progress, index: int, name: str) -> Step | None:
    """A mask of the student's own making applied at mask stage `name`: named by what it hides
    (see pipeline.mask_misconception), located where its pattern goes wrong."""
    state, student = progress.state, search.student
    base = {"masked": state.get("scores"), "masked_weights": state.get("attention_weights"), "mask": state.get("mask")}[
        name
    ]
    if base is None:
        return None
    for hidden in own_masks(student, base.shape[-1]):
        if not bool(hidden.any()):
            continue  # hiding nothing is leaving the mask out: an alternative that must be confirmed
        if name == "masked":
            value = base.masked_fill(hidden, -torch.inf)
        elif name == "masked_weights":
            value = base * ~hidden
        else:
            value = (~hidden).to(base.dtype)
        nodes = search.find(name, value, progress.nodes)
        later = search.lookahead(index, dict(state, **{name: value}), progress.nodes) if nodes is None else None
        held = nodes if nodes is not None else later
        if held is None:
            continue
        misconception = mask_misconception(hidden)
        if misconception == "":
            return Step(value, nodes)
        producer = student.producer(held[0])
        site = locate.mask_culprit(student, producer) if name != "mask" else None
        mistake = Mistake(
            name, misconception, "own-mask", site or (producer.site if producer else None), inferred=nodes is None
        )
        return Step(value, nodes, mistake, on_track=False)
    return None
