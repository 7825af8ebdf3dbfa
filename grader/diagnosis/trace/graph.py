"""The records of a trace as the trusted side holds it (see `grader.diagnosis.trace.documents`): its
ops, the tensors they made (nodes), the calls of the code under test, and the sites of their lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch

from grader.probes import tracer

MAX_NAME = tracer.MAX_TEXT
LAYOUT_OPS = frozenset(
    {
        "view",
        "reshape",
        "transpose",
        "permute",
        "contiguous",
        "T",
        "mT",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "expand",
        "expand_as",
        "clone",
        "detach",
        "to",
        "float",
        "double",
        "type_as",
        "view_as",
        "reshape_as",
        "movedim",
        "swapaxes",
        "swapdims",
        "__getitem__",
        "split",
        "chunk",
        "unbind",
        "narrow",
        "select",
        "bool",
        "int",
        "long",
        "half",
        "type",
    }
)


class TraceError(ValueError):
    """A trace that does not have the tracer's structure."""


@dataclass(frozen=True)
class Site:
    """Where the code under test called an op: its file (relative to the submission), line and function."""

    file: str
    line: int
    function: str


@dataclass(frozen=True)
class Node:
    index: int
    op: int  # the op that made it, or -1 for a tensor that came from outside the call (a leaf)
    shape: tuple[int, ...]
    dtype: str
    value: torch.Tensor | None
    origin: int | None  # for a leaf: the node (of an earlier call) that made the same tensor


@dataclass(frozen=True)
class Op:
    index: int
    name: str
    call: int
    stack: tuple[Site, ...]  # innermost first
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    failed: bool = False  # the op raised: the code under test stopped here

    @property
    def site(self) -> Site:
        return self.stack[0]

    def argument(self, position: int, name: str, default: Any = None) -> Any:
        """A non-tensor argument given by position or by keyword."""
        if name in self.kwargs:
            return self.kwargs[name]
        return self.args[position] if position < len(self.args) else default


@dataclass(frozen=True)
class Call:
    index: int
    function: str
    file: str | None
    line: int
    args: dict[str, Any]
    result: tuple[int, ...]
    returned: int = 0  # the line it returned from (0: not seen)


@dataclass
class Trace:
    ops: list[Op]
    nodes: list[Node]
    calls: list[Call]
    truncated: bool
    _consumers: dict[int, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for op in self.ops:
            for node in op.inputs:
                self._consumers.setdefault(node, []).append(op.index)

    def consumers(self, node: int) -> list[Op]:
        return [self.ops[i] for i in self._consumers.get(node, [])]

    @property
    def failed(self) -> Op | None:
        """The op that raised, if the code under test stopped with an error."""
        return next((op for op in reversed(self.ops) if op.failed), None)

    def producer(self, node: int) -> Op | None:
        op = self.nodes[node].op
        return self.ops[op] if op >= 0 else None

    @cached_property
    def live(self) -> frozenset[int]:
        """Nodes from which some call's returned tensor is reached: what the code under test used.

        A call whose result was not seen (it returned no tensor) keeps all of its nodes."""
        alive: set[int] = set()
        seen_calls = set()
        stack = []
        for call in self.calls:
            if call.result:
                seen_calls.add(call.index)
                stack += list(call.result)
        while stack:
            node = stack.pop()
            if node in alive:
                continue
            alive.add(node)
            producer = self.producer(node)
            if producer is not None:
                stack += list(producer.inputs)
        for op in self.ops:
            if op.call not in seen_calls:
                alive.update(op.outputs)
                alive.update(op.inputs)
        return frozenset(alive)


@dataclass(frozen=True)
class Ref:
    """A tensor argument: the node it is."""

    node: int
