"""Traces as the trusted side holds them: validated, typed, with the dataflow graph worked out.

A trace comes from code under test (see grader.probes.tracer): it is untrusted data. `parse_trace`
accepts only the documented structure, within the tracer's own caps, with every reference in range;
anything else raises `TraceError` and the trace is ignored (the test keeps its plain feedback).
A trace only ever shapes feedback text, never a score.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
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


def _site(data: Any) -> Site:
    if (
        type(data) is not list
        or len(data) != 3
        or type(data[0]) is not str
        or type(data[1]) is not int
        or type(data[2]) is not str
    ):
        raise TraceError("bad frame")
    if len(data[0]) > 300 or data[1] < 0 or ".." in data[0].split("/") or data[0].startswith("/"):
        raise TraceError("bad frame file")
    return Site(data[0], data[1], data[2][:MAX_NAME])


def _argument(value: Any, nodes: int, depth: int = 0) -> Any:
    if depth > 3:
        raise TraceError("argument nested too deeply")
    if value is None or type(value) in (bool, int):
        return value
    if type(value) is float:
        return value
    if type(value) is str:
        return value[:MAX_NAME]
    if type(value) is list:
        if len(value) > tracer.MAX_ARGS:
            raise TraceError("too many arguments")
        return tuple(_argument(v, nodes, depth + 1) for v in value)
    if type(value) is dict and len(value) == 1:
        ((key, item),) = value.items()
        if key == "node" and type(item) is int and -1 <= item < nodes:
            return Ref(item)
        if key == "float" and item in ("inf", "-inf", "nan"):
            return float(item)
        if key == "slice" and type(item) is list and len(item) == 3:
            return slice(*(_argument(v, nodes, depth + 1) for v in item))
        if key == "ellipsis":
            return Ellipsis
        if key in ("dtype", "other") and type(item) is str:
            return f"<{item[:MAX_NAME]}>"
    raise TraceError("bad argument")


@dataclass(frozen=True)
class Ref:
    """A tensor argument: the node it is."""

    node: int


def _int_list(data: Any, limit: int, bound: int) -> tuple[int, ...]:
    if type(data) is not list or len(data) > limit or any(type(i) is not int or not -1 <= i < bound for i in data):
        raise TraceError("bad index list")
    return tuple(data)


def parse_trace(document: Any) -> Trace:
    """A validated `Trace` from the tracer's document; `TraceError` for anything else."""
    if type(document) is not dict or not {"ops", "nodes", "calls", "truncated"} <= set(document) <= {
        "ops",
        "nodes",
        "calls",
        "truncated",
        "values",
    }:
        raise TraceError("not a trace")
    values = _values(document.get("values", {}))
    raw_ops, raw_nodes, raw_calls = document["ops"], document["nodes"], document["calls"]
    if (
        type(raw_ops) is not list
        or type(raw_nodes) is not list
        or type(raw_calls) is not list
        or type(document["truncated"]) is not bool
    ):
        raise TraceError("not a trace")
    if len(raw_ops) > tracer.MAX_OPS or len(raw_nodes) > tracer.MAX_NODES or len(raw_calls) > tracer.MAX_OPS:
        raise TraceError("trace too large")
    nodes: list[Node] = []
    elements = 0
    for index, data in enumerate(raw_nodes):
        if type(data) is not dict or not {"op", "shape", "dtype"} <= set(data) <= {
            "op",
            "shape",
            "dtype",
            "value",
            "origin",
        }:
            raise TraceError("bad node")
        op, shape, dtype = data["op"], data["shape"], data["dtype"]
        if type(op) is not int or not -1 <= op < len(raw_ops) or type(dtype) is not str or len(dtype) > 20:
            raise TraceError("bad node")
        if type(shape) is not list or len(shape) > 8 or any(type(n) is not int or n < 0 for n in shape):
            raise TraceError("bad node shape")
        value = data.get("value")
        if type(value) is int and "values" in document:  # sent packed (grader.sandbox.driver.packed)
            value = _packed_value(values, dtype, shape, value)
        if value is not None:
            if type(value) is not torch.Tensor or list(value.shape) != shape or value.numel() > tracer.MAX_VALUE:
                raise TraceError("bad node value")
            elements += value.numel()
            if elements > tracer.MAX_ELEMENTS:
                raise TraceError("trace values too large")
        origin = data.get("origin")
        if origin is not None and (type(origin) is not int or not 0 <= origin < index):
            raise TraceError("bad node origin")
        nodes.append(Node(index, op, tuple(shape), dtype, value, origin))
    ops: list[Op] = []
    for index, data in enumerate(raw_ops):
        if (
            type(data) is not dict
            or not {"name", "call", "stack", "args", "kwargs", "in", "out"}
            <= set(data)
            <= {"name", "call", "stack", "args", "kwargs", "in", "out", "failed"}
            or data.get("failed", True) is not True
        ):
            raise TraceError("bad op")
        if (
            type(data["name"]) is not str
            or type(data["call"]) is not int
            or not -1 <= data["call"] < max(len(raw_calls), 1)
        ):
            raise TraceError("bad op")
        if type(data["stack"]) is not list or not 1 <= len(data["stack"]) <= tracer.MAX_STACK:
            raise TraceError("bad op stack")
        if type(data["args"]) is not list or type(data["kwargs"]) is not dict or len(data["kwargs"]) > tracer.MAX_ARGS:
            raise TraceError("bad op arguments")
        outputs = _int_list(data["out"], tracer.MAX_ARGS, len(nodes))
        for output in outputs:
            if output >= 0 and nodes[output].op != index:
                raise TraceError("output made by another op")
        ops.append(
            Op(
                index,
                data["name"][:MAX_NAME],
                data["call"],
                tuple(_site(s) for s in data["stack"]),
                _argument(data["args"], len(nodes)),
                {str(k)[:MAX_NAME]: _argument(v, len(nodes)) for k, v in data["kwargs"].items()},
                tuple(i for i in _int_list(data["in"], 2 * tracer.MAX_ARGS, len(nodes)) if i >= 0),
                tuple(i for i in outputs if i >= 0),
                "failed" in data,
            )
        )
    for node in nodes:
        if node.op >= 0 and node.index not in ops[node.op].outputs:
            raise TraceError("node not made by its op")
    calls: list[Call] = []
    for index, data in enumerate(raw_calls):
        if (
            type(data) is not dict
            or not {"function", "file", "line", "args", "result"}
            <= set(data)
            <= {"function", "file", "line", "args", "result", "returned"}
            or type(data.get("returned", 0)) is not int
        ):
            raise TraceError("bad call")
        if (
            type(data["function"]) is not str
            or not (data["file"] is None or type(data["file"]) is str)
            or type(data["line"]) is not int
            or type(data["args"]) is not dict
        ):
            raise TraceError("bad call")
        args = {str(k)[:MAX_NAME]: _argument(v, len(nodes)) for k, v in list(data["args"].items())[: tracer.MAX_ARGS]}
        calls.append(
            Call(
                index,
                data["function"][:MAX_NAME],
                data["file"],
                data["line"],
                args,
                tuple(i for i in _int_list(data["result"], tracer.MAX_ARGS, len(nodes)) if i >= 0),
                data.get("returned", 0),
            )
        )
    return Trace(ops, nodes, calls, document["truncated"])


def _values(data: Any) -> dict[str, torch.Tensor]:
    """A packed document's flat value tensors, one per dtype (named as the nodes name theirs)."""
    if type(data) is not dict or len(data) > 16:
        raise TraceError("bad values")
    for dtype, flat in data.items():
        if type(flat) is not torch.Tensor or flat.dim() != 1 or str(flat.dtype).removeprefix("torch.") != dtype:
            raise TraceError("bad values")
    if sum(flat.numel() for flat in data.values()) > tracer.MAX_ELEMENTS:
        raise TraceError("trace values too large")
    return data


def _packed_value(values: dict[str, torch.Tensor], dtype: str, shape: list[int], offset: int) -> torch.Tensor:
    flat = values.get(dtype)
    numel = math.prod(shape)
    if flat is None or offset < 0 or numel > tracer.MAX_VALUE or offset + numel > flat.numel():
        raise TraceError("bad node value")
    try:
        return flat[offset : offset + numel].view(shape)
    except (TypeError, RuntimeError) as exc:  # no elements, but a size torch cannot hold (2**63)
        raise TraceError("bad node shape") from exc


def finite_or_none(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) else None


@dataclass(frozen=True, eq=False)
class Received:
    """A tracer's document as it came from the sandbox, with the digest of the payload that carried
    it (`SandboxRun.digests`): the same payload, the same document, so the same findings."""

    document: Any
    digest: bytes


def documents_of(results: dict[str, Any], digests: Mapping[str, bytes] | None = None) -> dict[str, Any]:
    """The tracer's documents in a trace job's results (probe -> {"trace": document}, as the sandbox's
    boundary let them through), each `Received` with its payload's digest where `digests` has it; a
    probe whose trace did not come back (an error, over the budget) has none. Still untrusted:
    `parse_trace` reads each one."""
    digests = digests or {}
    return {
        name: Received(result["trace"], digests[name]) if name in digests else result["trace"]
        for name, result in results.items()
        if type(result) is dict and set(result) == {"trace"} and type(result["trace"]) is dict
    }


def fingerprint(document: dict) -> bytes:
    """A digest of a trace document's whole content (every op, argument, site and recorded value),
    for a document `parse_trace` accepted (so its keys are strings and its tensors are the nodes'
    values): documents with the same digest are the same trace, and so have the same findings."""
    digest = hashlib.blake2b(digest_size=32)
    tensors: list[torch.Tensor] = []

    def tensor(item: Any) -> list:
        if type(item) is not torch.Tensor:
            raise TypeError(type(item).__name__)
        tensors.append(item)
        return ["tensor", len(tensors) - 1, str(item.dtype), list(item.shape)]

    digest.update(json.dumps(document, sort_keys=True, default=tensor, allow_nan=True).encode("utf-8", "surrogatepass"))
    for item in tensors:
        item = item.detach().contiguous()
        try:
            digest.update(item.numpy().data)
        except (TypeError, RuntimeError):  # no numpy dtype (bfloat16...): its bytes
            digest.update(item.view(-1).view(torch.uint8).numpy().data)
    return digest.digest()
