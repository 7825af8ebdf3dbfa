"""Where a student's computation departs from the reference, for the public checks (PyTorch).

`traced(run, own)` runs `run()` under a torch function mode that records every torch op that the
student's code calls (`own(filename)` says which files are the student's): its name, its tensor
inputs (the ops that made them), a copy of its (small) output and the student's line that called it.
`departure(trace, output, checkpoints)` compares that record with the reference's intermediate
values on the same inputs (check_expected.json, made when the bundle was: the queries, the
scores, the masked scores, the weights...): the first of them the student's output does not pass
through is where the computation departs, and the line is the student's op there: the op that
computed that value and threw it away (a masked_fill whose result is never used), or else the
first op after the last value that still matched.
"""

from __future__ import annotations

import itertools
import os
import sys

MAX_VALUE = 4096  # elements of one op's output that are kept
MAX_OPS = 4000
TRACER = os.path.abspath(__file__)  # this file: its frames are on top of every op's stack
HERE = os.path.dirname(TRACER)  # the public checks' folder
IGNORED = {"__get__", "__set__", "size", "dim", "__len__", "__bool__", "item", "tolist", "numel", "__index__"}


class Op:
    """One torch op the student's code called: its name, the ops whose outputs it took, a copy of
    its output (None when large) and where it was called: (file, line, function)."""

    def __init__(self, name, inputs, value, place):
        self.name, self.inputs, self.value, self.place = name, inputs, value, place


def _checks(filename):
    """Whether a file is one of the public checks (ch3_check*.py, check.py beside this file) other
    than this one."""
    path = os.path.abspath(filename)
    name = os.path.basename(path)
    return path != TRACER and name.startswith(("ch3_check", "check")) and os.path.dirname(path) == HERE


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


class Trace:
    """The ops of one run, and which op made each tensor (by the tensor's identity: every tensor
    recorded is kept alive until the trace is dropped, so that no identity is reused)."""

    def __init__(self, own):
        self.own, self.ops, self.maker, self._alive = own, [], {}, []

    def place(self):
        """The student's line that called the op: the innermost frame of the student's code, unless
        a frame of the public checks comes first (the checks made the op: a probe's input, say;
        their caller, a test file or a notebook's test cell, is not the student's computation)."""
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if _checks(filename):
                return None
            if self.own(filename):
                return filename, frame.f_lineno, frame.f_code.co_name
            frame = frame.f_back
        return None

    def record(self, func, args, kwargs, out):
        name = getattr(func, "__name__", "") or ""
        if name == "__get__":
            name = getattr(getattr(func, "__self__", None), "__name__", "") or name
        place = self.place()
        if place is None or name in IGNORED or len(self.ops) >= MAX_OPS:
            return
        written = name == "__setitem__" or (name.endswith("_") and not name.startswith("_"))
        outputs = _tensors(args[0]) if written and args else _tensors(out)
        if not outputs:
            return
        inputs = tuple(self.maker[id(t)] for t in _tensors(list(args) + list(kwargs.values())) if id(t) in self.maker)
        first = outputs[0]
        value = first.detach().clone() if first.numel() <= MAX_VALUE else None
        self.ops.append(Op(name, inputs, value, place))
        for tensor in outputs:
            self.maker[id(tensor)] = len(self.ops) - 1
            self._alive.append(tensor)


def traced(run, own):
    """run() under the recorder; (its result, the Trace). The recorder never changes what an op
    returns, and a failure of its own only leaves the op out."""
    from torch.overrides import TorchFunctionMode

    trace = Trace(own)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            try:
                trace.record(func, args, kwargs, out)
            except Exception:  # noqa: BLE001 - the record is only ever a hint
                pass
            return out

    with Mode():
        result = run()
    return result, trace


def same(a, b, atol=1e-4):
    """Two values equal up to a small tolerance, in any order of their dimensions (a transposed copy
    of the reference's value is the same value; a reshaped one is not: merging heads without
    transposing back is a reshape): NaN matches NaN, an infinity the same infinity."""
    import torch

    if a is None or b is None or a.numel() != b.numel():
        return False
    a, b = a.detach().double(), b.detach().double()

    def close(x, y):
        return bool(torch.allclose(x, y, atol=atol, rtol=1e-3, equal_nan=True))

    if a.squeeze().shape == b.squeeze().shape and close(a.squeeze(), b.squeeze()):
        return True
    # other orders of the dimensions only when no dimension of size 1 is involved: with one (a head
    # of one dimension), a transposed copy of one value can be another value altogether
    if a.dim() != b.dim() or a.dim() > 4 or 1 in a.shape or sorted(a.shape) != sorted(b.shape):
        return False
    for order in itertools.permutations(range(a.dim())):
        moved = a.permute(order)
        if moved.shape == b.shape and close(moved, b):
            return True
    return False


def _ancestors(trace, output):
    """The ops the output was computed from (all of them when it was not made by a recorded op)."""
    last = trace.maker.get(id(output))
    if last is None:
        return set(range(len(trace.ops)))
    found, todo = set(), [last]
    while todo:
        index = todo.pop()
        if index not in found:
            found.add(index)
            todo += trace.ops[index].inputs
    return found


def departure(trace, output, checkpoints):
    """(name of the first reference value the output does not pass through, the student's place
    there) or None when the output passes through every one; the place is None when no op of the
    student's can be named."""
    used = sorted(_ancestors(trace, output))
    matched = []  # the last op of the student's that reproduces each value so far
    for name, value in checkpoints:
        hits = [i for i in used if same(trace.ops[i].value, value)]
        if hits:
            matched.append(hits[-1])
            continue
        unused = [i for i in range(len(trace.ops)) if i not in used and same(trace.ops[i].value, value)]
        if unused:  # computed, then never used: that is the line
            return name, trace.ops[unused[0]].place
        after = [i for i in used if i > max(matched, default=-1)]
        return name, trace.ops[after[0]].place if after else (trace.ops[used[-1]].place if used else None)
    return None
