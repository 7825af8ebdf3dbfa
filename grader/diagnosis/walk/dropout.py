"""Dropout, followed through the student's own ops, for the walk (`walker`): its random values cannot
be recomputed, but which checkpoint a dropout consumes, and whether it is active when the
reference's is not, can. Each function returns the `Step` the walk records."""

from __future__ import annotations

import torch

from grader.diagnosis.trace import locate
from grader.diagnosis.trace.documents import Op, Trace
from grader.diagnosis.walk.checkpoints import DROPOUT_OPS, Instance
from grader.diagnosis.walk.findings import Mistake
from grader.diagnosis.walk.progress import Nodes, Progress, Step
from grader.diagnosis.walk.sites import Sites


def dropout_of(student: Trace, nodes: Nodes | None) -> Op | None:
    """A live dropout op applied to the tensor `nodes` hold."""
    if not nodes:
        return None
    live = student.live
    for op in student.consumers(nodes[0]):
        if op.name in DROPOUT_OPS and any(out in live for out in op.outputs):
            return op
    return None


def active(student: Trace, op: Op) -> bool:
    """Whether the dropout op changed its input (or, without both values, was asked to)."""
    before = student.nodes[op.inputs[0]].value if op.inputs else None
    after = student.nodes[op.outputs[0]].value if op.outputs else None
    if before is not None and after is not None and before.shape == after.shape:
        same = (before == after) | (torch.isnan(before) & torch.isnan(after))
        return not bool(same.all())
    p, training = op.argument(1, "p", 0.5), op.argument(2, "training", True)
    return bool(training) and isinstance(p, (int, float)) and p > 0


def reference_drops(instance: Instance) -> bool:
    dropout = instance.dropout
    return dropout is not None and dropout[1] and dropout[0] > 0


def misplaced(student: Trace, name: str, nodes: Nodes | None) -> Step | None:
    """An active dropout applied to checkpoint `name` (not the weights): on the scores or the output."""
    op = dropout_of(student, nodes)
    if op is None or not active(student, op) or not op.outputs:
        return None
    value = student.nodes[op.outputs[0]].value
    if value is None:
        return None
    return Step(
        value, (op.outputs[0],), Mistake(name, "dropout-misplaced", "dropout-on-" + name, op.site), on_track=False
    )


def dropped(student: Trace, instance: Instance, progress: Progress, sites: Sites) -> Step:
    """The "dropped" checkpoint: the student's dropout of the weights (active in eval mode is a
    mistake), else the weights themselves (no dropout where the reference drops is one)."""
    weights = progress.nodes.get("weights")
    op = dropout_of(student, weights)
    if op is not None and op.outputs and student.nodes[op.outputs[0]].value is not None:
        is_active = active(student, op)
        mistake = (
            Mistake("dropped", "dropout-misplaced", "active-in-eval", op.site)
            if is_active and not reference_drops(instance)
            else None
        )
        return Step(student.nodes[op.outputs[0]].value, (op.outputs[0],), mistake, on_track=not is_active)
    mistake = None
    if reference_drops(instance):
        live = student.live
        elsewhere = any(
            op.name in DROPOUT_OPS and active(student, op) and any(o in live for o in op.outputs) for op in student.ops
        )
        if not elsewhere:
            dead = locate.dead_op(student, DROPOUT_OPS, sites.call if sites.call >= 0 else None)
            site = sites.in_call(dead) if dead is not None else locate.frontier(student, weights)
            mistake = Mistake("dropped", None, "no-dropout", site)
    return Step(progress.state.get("weights"), weights, mistake, on_track=not reference_drops(instance))
