"""Exercise 3.1's copies, for the walk (`walker`): what the student wrote into the matrix the
reference writes a checkpoint into (the weights copied from one attention class to the other)."""

from __future__ import annotations

import torch

from grader.diagnosis.trace.documents import Op, Trace
from grader.diagnosis.walk.checkpoints import Instance
from grader.diagnosis.walk.findings import WRITES, Departure, Mistake, _first_tensor, _safely
from grader.diagnosis.walk.layout import close, comparable
from grader.diagnosis.walk.pipeline import COPIES, STAGES
from grader.diagnosis.walk.progress import Step


def copied(reference: Trace, instance: Instance, student: Trace, name: str) -> Step | Departure | None:
    """Copy `name` as the student wrote it: right, one of its known wrong ways, or the right matrix
    written into another one (a `Step`); a write of something else (the `Departure`); None when
    the student wrote nothing where the reference does (the walk looks for it as for any stage)."""
    right = instance.value(reference, name)
    written = _last_write(reference, instance, student, name)
    if written is None and right is not None:
        elsewhere = _written_elsewhere(student, right)
        if elsewhere is not None:
            return Step(
                right, None, Mistake(name, "weights-swapped", "written-elsewhere", elsewhere.site), on_track=False
            )
    if written is None or right is None:
        return None
    value = student.nodes[written.outputs[0]].value
    if value is None or (value.shape == right.shape and close(comparable(value), comparable(right))):
        return Step(right, (written.outputs[0],))
    given = {c: v for c in COPIES if (v := instance.value(reference, c)) is not None}
    for alternative in STAGES[name].alternatives:
        wrong = _safely(alternative.fn, given, instance.context)
        if wrong is not None and wrong.shape == value.shape and close(comparable(wrong), comparable(value)):
            return Step(
                wrong,
                (written.outputs[0],),
                Mistake(name, alternative.misconception, alternative.key, written.site),
                on_track=False,
            )
    return Departure(name, written.site)


def _last_write(reference: Trace, instance: Instance, student: Trace, name: str) -> Op | None:
    """The student's last write into the matrix the reference writes `name` into (the writes into
    the same matrix, one after the other)."""
    op = instance.ops.get(name)
    target = _first_tensor(reference, op) if op is not None else None
    written = None
    for candidate in student.ops:
        if candidate.name in WRITES and candidate.outputs and target is not None:
            before = _first_tensor(student, candidate)
            if before is not None and before.shape == target.shape and close(comparable(before), comparable(target)):
                written = candidate
                target = student.nodes[candidate.outputs[0]].value
    return written


def _written_elsewhere(student: Trace, right: torch.Tensor) -> Op | None:
    """A write of the right matrix into another one."""
    for candidate in student.ops:
        value = student.nodes[candidate.outputs[0]].value if candidate.name in WRITES and candidate.outputs else None
        if value is not None and value.shape == right.shape and close(comparable(value), comparable(right)):
            return candidate
    return None
