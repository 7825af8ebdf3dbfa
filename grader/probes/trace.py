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
(grader.diagnosis.traces) and never scores from it. It runs in the sandbox, so this module imports
nothing but the standard library and torch.
"""
from __future__ import annotations

import functools
import math
import os
import sys
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

MAX_OPS = 3000
MAX_NODES = 6000
MAX_VALUE = 4096  # elements of one recorded tensor value
MAX_ELEMENTS = 300_000  # elements of all recorded values together
MAX_STACK = 4  # student frames kept per op, innermost first
MAX_ARGS = 12
MAX_TEXT = 80
# ops whose output is uninitialised memory: its value says nothing (and differs from run to run)
UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided"})
# results and properties that say nothing about the computation
IGNORED = frozenset({"grad_fn", "shape", "dtype", "device", "requires_grad", "is_leaf", "grad", "_version",
                     "_set_grad_enabled", "_has_compatible_shallow_copy_type", "__len__", "__repr__",
                     "__format__", "__bool__", "__index__", "__hash__", "data_ptr", "tolist", "numpy"})


class Tracer(TorchFunctionMode):
    """Records the ops called from files under `directory` (see the module docstring)."""

    def __init__(self, directory: str):
        super().__init__()
        self.prefix = os.path.realpath(directory) + os.sep
        self.ops: list[dict] = []
        self.nodes: list[dict] = []
        self.calls: list[dict] = []
        self.truncated = False
        self.elements = 0
        self._files: dict[str, str | None] = {}
        self._objects: dict[int, int] = {}  # id(tensor) -> its latest node, in any call
        self._call_nodes: dict[int, int] = {}  # id(tensor) -> node, in the current call
        self._keep: list[Any] = []  # every tensor seen stays alive, so that ids are never reused
        self._call_frames: dict[int, int] = {}  # id(outermost student frame) -> call index
        self._frames: list[Any] = []
        self._storages: dict[int, int] = {}  # data_ptr -> node (a Parameter wrapping a recorded tensor)
        self._blank: set[int] = set()  # nodes of uninitialised memory
        self._busy = False  # recording: the tracer's own torch calls are not the code under test's
        self._previous_trace: Any = None

    # -- where code runs ---------------------------------------------------------------------------
    def _relative(self, filename: str) -> str | None:
        if filename not in self._files:
            real = _realpath(filename) if filename and not filename.startswith("<") else ""
            self._files[filename] = real[len(self.prefix):] if real.startswith(self.prefix) else None
        return self._files[filename]

    def _student_stack(self, frame: Any) -> tuple[list[list], Any]:
        """The student frames from `frame` out (innermost first, at most MAX_STACK of them, the
        outermost always among them) and the outermost one. The walk ends at the current call's
        outermost frame: nothing outside it is the code under test's."""
        stack: list[list] = []
        outermost = None
        last: list | None = None
        stop = self._frames[-1] if self._frames else None
        while frame is not None:
            relative = self._relative(frame.f_code.co_filename)
            if relative is not None:
                entry = [relative, frame.f_lineno or 0, frame.f_code.co_name[:MAX_TEXT]]
                if len(stack) < MAX_STACK - 1:
                    stack.append(entry)
                else:
                    last = entry  # the outermost frame is kept too: where the code under test was entered
                outermost = frame
            if frame is stop:
                break
            frame = frame.f_back
        if last is not None:
            stack.append(last)
        return stack, outermost

    # -- calls into the code under test ------------------------------------------------------------
    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        """The global trace function (sys.settrace): Python calls only (C calls never come here). Each
        call of the run comes here once; all but the code under test's outermost calls leave at once
        with no local trace, so that neither their lines nor their returns are seen (this hook is much
        of a trace's cost). An outermost call gets `_returned` for its return alone."""
        if self._files.get(frame.f_code.co_filename, "") is None or self._busy or self.truncated:
            return None
        self._busy = True
        try:
            started = self._on_call(frame)
        except Exception:  # noqa: BLE001 - a trace that cannot be kept must never change the result
            self.truncated = True
            started = False
        finally:
            self._busy = False
        if not started:
            return None
        frame.f_trace_lines = False
        return self._returned

    def _returned(self, frame: Any, event: str, arg: Any) -> Any:
        """The local trace function of an outermost call: its return (its lines are switched off)."""
        if event != "return" or id(frame) not in self._call_frames or self._busy or self.truncated:
            return self._returned
        self._busy = True
        try:
            if frame is self._frames[-1]:
                call = self.calls[self._call_frames.pop(id(frame))]
                self._frames.pop()
                call["result"] = [self._node_of(t) for t in _tensors(arg)][:MAX_ARGS]
                call["returned"] = frame.f_lineno or 0  # the line it returned from
        except Exception:  # noqa: BLE001
            self.truncated = True
        finally:
            self._busy = False
        return self._returned

    def _on_call(self, frame: Any) -> bool:
        """Start a call record when `frame` is an outermost call of the code under test."""
        if self._relative(frame.f_code.co_filename) is None:
            return False
        back = frame.f_back
        while back is not None:
            if self._relative(back.f_code.co_filename) is not None:
                return False  # a nested call of the code under test (perhaps through torch's own code)
            back = back.f_back
        self._start_call(frame)
        return not self.truncated

    def _start_call(self, frame: Any) -> None:
        if len(self.calls) >= MAX_OPS:
            self.truncated = True
            return
        self._call_nodes = {}
        code = frame.f_code
        call: dict = {"function": code.co_name[:MAX_TEXT], "file": self._relative(code.co_filename),
                      "line": code.co_firstlineno, "args": {}, "result": []}
        self._call_frames[id(frame)] = len(self.calls)
        self._frames.append(frame)
        self.calls.append(call)
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for name in names[:MAX_ARGS]:
            value = frame.f_locals.get(name)
            if isinstance(value, torch.Tensor):
                call["args"][name[:MAX_TEXT]] = {"node": self._node_of(value)}
            elif type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
                call["args"][name[:MAX_TEXT]] = value if type(value) is not str else value[:MAX_TEXT]

    # -- nodes: tensors of the dataflow graph ------------------------------------------------------
    def _new_node(self, tensor: torch.Tensor, op: int, blank: bool = False) -> int:
        """`blank`: made by an op that leaves its memory uninitialised (no value worth recording); so
        is a leaf whose origin is such a node (the tensor was not written since)."""
        if len(self.nodes) >= MAX_NODES:
            self.truncated = True
            return -1
        node: dict = {"op": op, "shape": list(tensor.shape)[:8], "dtype": str(tensor.dtype).removeprefix("torch.")}
        numel = tensor.numel()
        if op < 0:  # made by an op of an earlier call, or the same storage as a recorded tensor
            origin = self._objects.get(id(tensor))
            if origin is None and numel:
                origin = self._storages.get(_storage(tensor))  # -1 is never a key
            if origin is not None:
                node["origin"] = origin
                blank = blank or origin in self._blank
        if not blank and numel <= MAX_VALUE and self.elements + numel <= MAX_ELEMENTS and tensor.layout == torch.strided \
                and tensor.dim() <= 8:
            value = tensor.detach().clone()
            node["value"] = value if type(value) is torch.Tensor else value.as_subclass(torch.Tensor)
            self.elements += numel
        self.nodes.append(node)
        self._keep.append(tensor)
        index = len(self.nodes) - 1
        if blank:
            self._blank.add(index)
        self._objects[id(tensor)] = index
        storage = _storage(tensor) if numel else -1
        if storage != -1 and storage not in self._storages:
            self._storages[storage] = index
            self._keep.append(tensor.untyped_storage())  # so its address is never another storage's
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
        """An op: run and recorded with the trace hook off. Nothing in here is the code under test's
        (the mode is off inside its own handler, and a call of the code under test from in here
        would be a nested one), and the hook would slow every Python call of the recording."""
        hook = sys.gettrace()
        sys.settrace(None)
        try:
            return self._op(func, args, kwargs or {})
        finally:
            sys.settrace(hook)

    def _op(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        if args and isinstance(args[0], torch.Tensor) and not self.truncated and not self._busy \
                and _writes(getattr(func, "__name__", "")):
            self._busy = True  # what an in-place op overwrites is kept as it was before
            try:
                self._node_of(args[0])
            except Exception:  # noqa: BLE001
                self.truncated = True
            finally:
                self._busy = False
        if not self._frames:  # outside every call of the code under test (the probe's own setup): not kept
            return func(*args, **kwargs)
        try:
            out = func(*args, **kwargs)
        except BaseException:
            self._keep_op(func, args, kwargs, None, failed=True)  # the op where the code under test stopped
            raise
        self._keep_op(func, args, kwargs, out)
        return out

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
        outputs = [] if failed else [mutated] if mutated is not None else _tensors(out)
        if not outputs and not failed:
            return
        stack, outermost = self._student_stack(sys._getframe(3))
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
        op: dict = {"name": name[:MAX_TEXT], "call": len(self.calls) - 1, "stack": stack,
                    "args": [self._argument(a) for a in args[:MAX_ARGS]],
                    "kwargs": {str(k)[:MAX_TEXT]: self._argument(v) for k, v in list(kwargs.items())[:MAX_ARGS]}}
        op["in"] = sorted({ref["node"] for ref in _refs(op["args"]) + _refs(list(op["kwargs"].values()))})
        if failed:
            op["failed"] = True
        self.ops.append(op)
        op["out"] = [self._new_node(t, index, blank=name in UNINITIALISED) for t in outputs[:MAX_ARGS]]

    # -- the whole run -----------------------------------------------------------------------------
    def __enter__(self):
        self._previous_trace = sys.gettrace()
        sys.settrace(self._call)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            sys.settrace(self._previous_trace)
        finally:
            super().__exit__(*exc)  # the mode never outlives the run, whatever the trace hook was

    def document(self) -> dict:
        return {"ops": self.ops, "nodes": self.nodes, "calls": self.calls, "truncated": self.truncated}


@functools.lru_cache(maxsize=4096)
def _realpath(filename: str) -> str:
    """A code file's real path, resolved once per process (every probe's tracer asks for the same files)."""
    return os.path.realpath(filename)


def _writes(name: str) -> bool:
    return name == "__setitem__" or (name.endswith("_") and not name.startswith("_"))


def _storage(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - tensors without storage
        return -1


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []


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
