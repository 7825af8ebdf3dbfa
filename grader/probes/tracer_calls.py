"""Calls into the code under test, for the tracer (grader.probes.tracer): which are outermost,
their arguments, their returned tensors and the line they returned from, and where code runs.

A global trace function (sys.settrace) sees every Python call of the run; all but the code under
test's outermost calls leave at once with no local trace. `CallRecorder` is the tracer's base: it
keeps `calls` and the frames of the calls in progress, and asks the tracer (`_node_of`) for the
nodes of the tensors it records. The trace hook is set for the run and the hooks found (trace and
profile) are put back after it, even when the code under test enters the tracer again or sets a
profile hook; `sys.settrace` and `sys.gettrace` are used as the tracer found them (code under
test may replace them). Runs in the sandbox: imports only the standard library, torch and grader.probes.own_code.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from typing import Any

import torch

from grader.probes.own_code import from_its_file

MAX_OPS = 3000  # ops, and calls, in one trace
MAX_STACK = 4  # student frames kept per op, innermost first
MAX_ARGS = 12
MAX_TEXT = 80

# as the tracer found them: code under test that replaces sys.settrace does not change the tracer's
settrace, gettrace = sys.settrace, sys.gettrace


class CallRecorder:
    """The calls into the code under test in `directory` (see the module docstring)."""

    def __init__(self, directory: str):
        self.prefix = os.path.realpath(directory) + os.sep
        self.calls: list[dict] = []
        self.truncated = False
        self._files: dict[str, str | None] = {}
        self._call_frames: dict[int, int] = {}  # id(outermost student frame) -> call index
        self._frames: list[Any] = []  # the outermost frames of the calls in progress
        self._call_nodes: dict[int, int] = {}  # id(tensor) -> node, in the current call
        self._busy = False  # recording: the tracer's own calls are not the code under test's
        self._previous: tuple[Any, Any] = (None, None)  # the trace and profile hooks before the run
        self._entered = 0
        self._hook = self._call  # the trace hook, one object (so that it is found again by identity)

    def _node_of(self, tensor: torch.Tensor) -> int:
        raise NotImplementedError  # the tracer's

    # -- where code runs ---------------------------------------------------------------------------
    def _relative(self, filename: str) -> str | None:
        if filename not in self._files:
            real = _realpath(filename) if filename and not filename.startswith("<") else ""
            self._files[filename] = real[len(self.prefix) :] if real.startswith(self.prefix) else None
        return self._files[filename]

    def _student_file(self, code: Any) -> str | None:
        """The student file `code` is code of, relative to the folder; None for code of other files
        and for code compiled at run time under a student file's name (its lines are not the file's:
        see grader.probes.own_code)."""
        relative = self._relative(code.co_filename)
        return relative if relative is not None and from_its_file(code) else None

    def _student_stack(self, frame: Any) -> tuple[list[list], Any]:
        """The student frames from `frame` out (innermost first, at most MAX_STACK of them, the
        outermost always among them) and the outermost one. The walk ends at the current call's
        outermost frame: nothing outside it is the code under test's."""
        stack: list[list] = []
        outermost = None
        last: list | None = None
        stop = self._frames[-1] if self._frames else None
        while frame is not None:
            relative = self._student_file(frame.f_code)
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
                call["result"] = [self._node_of(t) for t in tensors(arg)][:MAX_ARGS]
                call["returned"] = frame.f_lineno or 0  # the line it returned from
        except Exception:  # noqa: BLE001
            self.truncated = True
        finally:
            self._busy = False
        return self._returned

    def _on_call(self, frame: Any) -> bool:
        """Start a call record when `frame` is an outermost call of the code under test."""
        if self._student_file(frame.f_code) is None:
            return False
        back = frame.f_back
        while back is not None:
            if self._student_file(back.f_code) is not None:
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
        call: dict = {
            "function": code.co_name[:MAX_TEXT],
            "file": self._relative(code.co_filename),
            "line": code.co_firstlineno,
            "args": {},
            "result": [],
        }
        self._call_frames[id(frame)] = len(self.calls)
        self._frames.append(frame)
        self.calls.append(call)
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        for name in names[:MAX_ARGS]:
            value = frame.f_locals.get(name)
            if isinstance(value, torch.Tensor):
                call["args"][name[:MAX_TEXT]] = {"node": self._node_of(value)}
            elif type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
                call["args"][name[:MAX_TEXT]] = value if type(value) is not str else value[:MAX_TEXT]

    # -- the run ---------------------------------------------------------------------------------------
    def _set_hooks(self) -> None:
        """The trace hook set for the run (once, however often the run is entered)."""
        if not self._entered:
            self._previous = (gettrace(), sys.getprofile())
            settrace(self._hook)
        self._entered += 1

    def _restore_hooks(self) -> None:
        """The hooks found put back when the run ends."""
        self._entered -= 1
        if not self._entered:
            settrace(self._previous[0])
            if sys.getprofile() is not self._previous[1]:  # the code under test set one
                try:
                    sys.setprofile(self._previous[1])
                except TypeError:  # a profiler of C's (cProfile) cannot be set again from Python
                    sys.setprofile(None)


@functools.lru_cache(maxsize=4096)
def _realpath(filename: str) -> str:
    """A code file's real path, resolved once per process (every probe's tracer asks for the same files)."""
    return os.path.realpath(filename)


def tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of a value, of a list or of a tuple (not nested)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []
