"""The tracer: what the code under test computes, torch op by torch op, for the diagnosis.

`traced(run, probe, ns, directory)` runs a probe (with `run`, e.g. the sandbox driver's
`run_probe`) under a `torch.overrides.TorchFunctionMode` and returns the probe's record with a
"trace" added. For every torch function or tensor method that code in `directory` calls (directly,
or through torch's own Python code such as nn.Linear), the trace keeps:
- the op's name and its non-tensor arguments (dim, diagonal, p, training, shapes...);
- its tensor inputs and outputs as nodes of a small dataflow graph, with output values when they
  are small (size-capped);
- where it was called: the innermost frames in `directory` (file relative to it, line, function).
Calls into the code under test (an outermost frame in `directory`) are numbered; each keeps its
tensor and number arguments and its returned tensors.

The trace only ever shapes a student's feedback text: the trusted side validates it
(grader.diagnosis.trace.documents) and never scores from it. It runs in the sandbox, so this module imports
nothing but the standard library, torch and its two helpers: grader.probes.tracer_calls (the calls
into the code under test) and grader.probes.unwritten (memory nobody wrote).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from grader.probes.tracer_calls import MAX_ARGS, MAX_OPS, MAX_STACK, MAX_TEXT, CallRecorder, gettrace, settrace, tensors
from grader.probes.unwritten import UnwrittenMemory, storage_of

__all__ = ["MAX_ARGS", "MAX_ELEMENTS", "MAX_NODES", "MAX_OPS", "MAX_STACK", "MAX_TEXT", "MAX_VALUE", "Tracer", "traced"]

MAX_NODES = 6000
MAX_VALUE = 4096  # elements of one recorded tensor value
MAX_ELEMENTS = 300_000  # elements of all recorded values together
# ops whose output is uninitialised memory: its value says nothing (and differs from run to run)
UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"})
# results and properties that say nothing about the computation
IGNORED = frozenset(
    {
        "grad_fn",
        "shape",
        "dtype",
        "device",
        "requires_grad",
        "is_leaf",
        "grad",
        "_version",
        "_set_grad_enabled",
        "_has_compatible_shallow_copy_type",
        "__len__",
        "__repr__",
        "__format__",
        "__bool__",
        "__index__",
        "__hash__",
        "data_ptr",
        "tolist",
        "numpy",
    }
)


class Tracer(CallRecorder, TorchFunctionMode):
    """Records the ops called from files under `directory` (see the module docstring)."""

    def __init__(self, directory: str):
        TorchFunctionMode.__init__(self)
        CallRecorder.__init__(self, directory)
        self.ops: list[dict] = []
        self.nodes: list[dict] = []
        self.elements = 0
        self._objects: dict[int, int] = {}  # id(tensor) -> its latest node, in any call
        self._keep: list[Any] = []  # every tensor seen stays alive, so that ids are never reused
        self._storages: dict[int, int] = {}  # data_ptr -> node (a Parameter wrapping a recorded tensor)
        self._memory = UnwrittenMemory()  # what torch.empty made and nobody wrote since: no value to record

    # -- nodes: tensors of the dataflow graph ------------------------------------------------------
    def _new_node(self, tensor: torch.Tensor, op: int, blank: bool = False, view: bool = False) -> int:
        """`blank`: made by an op that leaves its memory uninitialised (torch.empty). Neither it nor a
        leaf or a `view` (an output of an op that writes in place, or that shares an input's memory)
        that shows memory of it nobody wrote since gets a value (grader.probes.unwritten); any other
        op's output is new memory the op wrote."""
        if len(self.nodes) >= MAX_NODES:
            self.truncated = True
            return -1
        node: dict = {"op": op, "shape": list(tensor.shape)[:8], "dtype": str(tensor.dtype).removeprefix("torch.")}
        numel = tensor.numel()
        storage = storage_of(tensor)
        if blank:
            self._memory.made(tensor)
        elif (op < 0 or view) and self._memory:  # a leaf, or memory an op's input showed: perhaps unwritten
            blank = self._memory.blank(tensor)
        if (
            not blank
            and numel <= MAX_VALUE
            and self.elements + numel <= MAX_ELEMENTS
            and tensor.layout == torch.strided
            and tensor.dim() <= 8
        ):
            value = tensor.detach().clone()
            node["value"] = value if type(value) is torch.Tensor else value.as_subclass(torch.Tensor)
            self.elements += numel
        self.nodes.append(node)
        self._keep.append(tensor)
        index = len(self.nodes) - 1
        if op < 0:  # made by an op of an earlier call, or the same storage as a recorded tensor
            origin = self._objects.get(id(tensor))
            if origin is None and storage != -1:
                origin = self._storages.get(storage)
            if origin is not None:
                node["origin"] = origin
        self._objects[id(tensor)] = index
        if storage != -1 and storage not in self._storages:
            self._storages[storage] = index
            self._keep.append(tensor.untyped_storage())  # not freed (and its address not another's) while tracing
        self._call_nodes[id(tensor)] = index
        return index

    def _node_of(self, tensor: torch.Tensor) -> int:
        """The node of an input: the latest one made in this call, else a new leaf (value as it is now)."""
        known = self._call_nodes.get(id(tensor))
        return known if known is not None else self._new_node(tensor, -1)

    def _argument(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, torch.Tensor):
            return {"node": self._node_of(value)}
        if value is None or type(value) in (bool, int):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if type(value) is str:
            return value[:MAX_TEXT]
        if isinstance(value, (list, tuple)) and depth < 2:
            return [self._argument(item, depth + 1) for item in list(value)[:MAX_ARGS]]
        if isinstance(value, slice):
            return {"slice": [self._argument(v, depth + 1) for v in (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"ellipsis": True}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        return {"other": type(value).__name__[:MAX_TEXT]}

    # -- ops ---------------------------------------------------------------------------------------
    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        in_place = _writes(name)
        written = self._before_writing(in_place, args, kwargs) if in_place or "out" in kwargs else ()
        if not self._frames:  # outside every call of the code under test (the probe's own setup): not kept.
            try:  # The hook stays on: the op may run the code under test (a tensor's hook, an autograd
                return func(*args, **kwargs)  # Function's backward), an outermost call to record
            finally:
                if written:
                    self._after_writing(name, args, written)
        # Inside a call, the op and its recording run with the trace hook off: whatever code under test
        # the op runs is a nested call (not recorded), and the hook would slow every Python call. Only
        # this tracer's hook is switched off (code under test may have set its own), and it is set
        # again unless the op set one; an audit hook of the code's that refuses either is obeyed.
        hook = gettrace()
        if hook is self._hook:
            try:
                settrace(None)
            except Exception:  # noqa: BLE001
                hook = None
        try:
            try:
                out = func(*args, **kwargs)
            except BaseException:
                if written:
                    self._after_writing(name, args, written)
                self._keep_op(func, args, kwargs, None, failed=True)  # the op where the code under test stopped
                raise
            if written:
                self._after_writing(name, args, written)
            self._keep_op(func, args, kwargs, out)
            return out
        finally:
            if hook is self._hook and gettrace() is None:
                try:
                    settrace(hook)
                except Exception:  # noqa: BLE001 - the code's later calls are lost to its own trace
                    pass

    def _before_writing(self, in_place: bool, args: tuple, kwargs: dict) -> list[tuple[torch.Tensor, int]]:
        """The tensors an op writes to (an in-place op's first tensor, `out=`) with their storages'
        addresses; what an in-place op overwrites is kept as it was before (a leaf). torch.nn.init's
        functions pass their tensor by keyword."""
        targets = []
        if in_place:
            first = next((value for value in (*args[:1], *kwargs.values()) if isinstance(value, torch.Tensor)), None)
            if first is not None:
                targets.append(first)
        if args and targets and targets[0] is args[0] and not self.truncated and not self._busy:
            self._busy = True
            try:
                self._node_of(args[0])
            except Exception:  # noqa: BLE001
                self.truncated = True
            finally:
                self._busy = False
        targets += tensors(kwargs.get("out"))
        return [(target, storage_of(target)) for target in targets]

    def _after_writing(self, name: str, args: tuple, written: list[tuple[torch.Tensor, int]]) -> None:
        """What the op `name` wrote is no longer uninitialised; a storage it moved (resize_, set_) no
        longer names its old address."""
        for target, before in written:
            try:
                self._memory.written(target, before, name, args[1] if name == "__setitem__" and len(args) > 1 else None)
                if storage_of(target) != before:
                    self._storages.pop(before, None)
            except Exception:  # noqa: BLE001 - a trace that cannot be kept must never change the result
                self.truncated = True

    def _keep_op(self, func: Callable, args: tuple, kwargs: dict, out: Any, failed: bool = False) -> None:
        if self.truncated or self._busy:
            return
        self._busy = True
        try:
            self._record(func, args, kwargs, out, failed)
        except Exception:  # noqa: BLE001 - a trace that cannot be kept must never change the result
            self.truncated = True
        finally:
            self._busy = False

    def _record(self, func: Callable, args: tuple, kwargs: dict, out: Any, failed: bool = False) -> None:
        name = getattr(func, "__name__", "") or ""
        if name == "__get__":
            name = getattr(getattr(func, "__self__", None), "__name__", "") or ""
        if name in IGNORED:
            return
        mutated = args[0] if name == "__setitem__" and args and isinstance(args[0], torch.Tensor) else None
        outputs = [] if failed else [mutated] if mutated is not None else tensors(out)
        if not outputs and not failed:
            return
        stack, outermost = self._student_stack(sys._getframe(2))
        if not stack:
            return
        if len(self.ops) >= MAX_OPS:
            self.truncated = True
            return
        if outermost is not None and id(outermost) not in self._call_frames:
            self._start_call(outermost)  # entered before the trace hook was set (cannot happen in probes)
            outermost.f_trace_lines = False
            outermost.f_trace = self._returned
        index = len(self.ops)
        op: dict = {
            "name": name[:MAX_TEXT],
            "call": len(self.calls) - 1,
            "stack": stack,
            "args": [self._argument(a) for a in args[:MAX_ARGS]],
            "kwargs": {str(k)[:MAX_TEXT]: self._argument(v) for k, v in list(kwargs.items())[:MAX_ARGS]},
        }
        op["in"] = sorted({ref["node"] for ref in _refs(op["args"]) + _refs(list(op["kwargs"].values()))})
        if failed:
            op["failed"] = True
        self.ops.append(op)
        shown = bool(self._memory) and (mutated is not None or _writes(name) or _shares_memory(outputs, args))
        op["out"] = [self._new_node(t, index, blank=name in UNINITIALISED, view=shown) for t in outputs[:MAX_ARGS]]

    # -- the whole run -----------------------------------------------------------------------------
    def __enter__(self):
        self._set_hooks()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            self._restore_hooks()
        finally:
            super().__exit__(*exc)  # the mode never outlives the run, whatever the hooks were

    def document(self) -> dict:
        return {"ops": self.ops, "nodes": self.nodes, "calls": self.calls, "truncated": self.truncated}


def _writes(name: str) -> bool:
    return name == "__setitem__" or (name.endswith("_") and not name.startswith("_"))


def _shares_memory(outputs: list[torch.Tensor], args: tuple) -> bool:
    """Whether an op's output is a view, or shows the memory of one of its tensor arguments."""
    inputs = {storage_of(tensor) for tensor in tensors(args)}
    return any(output._is_view() or storage_of(output) in inputs for output in outputs)


def _refs(values: list) -> list[dict]:
    refs: list[dict] = []
    for value in values:
        if isinstance(value, dict) and "node" in value:
            if value["node"] >= 0:
                refs.append(value)
        elif isinstance(value, dict) and "slice" in value:
            refs += _refs(value["slice"])
        elif isinstance(value, list):
            refs += _refs(value)
    return refs


def traced(run: Callable[[Any, Any, str], dict], probe: Any, ns: Any, directory: str) -> dict:
    """`run(probe, ns, directory)` under the tracer; its record with the trace under "trace"."""
    tracer = Tracer(directory)
    with tracer:
        record = run(probe, ns, directory)
    record = dict(record)
    record["trace"] = tracer.document()
    return record
