"""Reading a tracer's document into a `Trace` (see `grader.diagnosis.trace.documents`): only the
documented structure, within the tracer's own caps, with every reference in range; anything else
raises `TraceError`."""

from __future__ import annotations

import math
from typing import Any

import torch

from grader.diagnosis.trace.graph import MAX_NAME, Call, Node, Op, Ref, Site, Trace, TraceError
from grader.probes import tracer


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


def _int_list(data: Any, limit: int, bound: int) -> tuple[int, ...]:
    if type(data) is not list or len(data) > limit or any(type(i) is not int or not -1 <= i < bound for i in data):
        raise TraceError("bad index list")
    return tuple(data)


_TRACE_KEYS = {"ops", "nodes", "calls", "truncated"}
_NODE_KEYS = {"op", "shape", "dtype"}
_OP_KEYS = {"name", "call", "stack", "args", "kwargs", "in", "out"}
_CALL_KEYS = {"function", "file", "line", "args", "result"}


def _keys(data: Any, required: set[str], optional: set[str]) -> bool:
    """Whether DATA is a dict with every key of REQUIRED and no other than those and OPTIONAL."""
    return type(data) is dict and required <= set(data) <= required | optional


def parse_trace(document: Any) -> Trace:
    """A validated `Trace` from the tracer's document; `TraceError` for anything else."""
    if not _keys(document, _TRACE_KEYS, {"values"}):
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
    nodes = _nodes(raw_nodes, len(raw_ops), values if "values" in document else None)
    ops = [_op(index, data, nodes, len(raw_calls)) for index, data in enumerate(raw_ops)]
    for node in nodes:
        if node.op >= 0 and node.index not in ops[node.op].outputs:
            raise TraceError("node not made by its op")
    calls = [_call(index, data, len(nodes)) for index, data in enumerate(raw_calls)]
    return Trace(ops, nodes, calls, document["truncated"])


def _nodes(raw_nodes: list, ops: int, values: dict[str, torch.Tensor] | None) -> list[Node]:
    """The nodes, made by ops below OPS, their values (`values`: a packed document's) within the
    tracer's caps, each and together."""
    nodes: list[Node] = []
    elements = 0
    for index, data in enumerate(raw_nodes):
        node = _node(index, data, ops, values)
        if node.value is not None:
            elements += node.value.numel()
            if elements > tracer.MAX_ELEMENTS:
                raise TraceError("trace values too large")
        nodes.append(node)
    return nodes


def _node(index: int, data: Any, ops: int, values: dict[str, torch.Tensor] | None) -> Node:
    if not _keys(data, _NODE_KEYS, {"value", "origin"}):
        raise TraceError("bad node")
    op, shape, dtype = data["op"], data["shape"], data["dtype"]
    if type(op) is not int or not -1 <= op < ops or type(dtype) is not str or len(dtype) > 20:
        raise TraceError("bad node")
    if type(shape) is not list or len(shape) > 8 or any(type(n) is not int or n < 0 for n in shape):
        raise TraceError("bad node shape")
    value = data.get("value")
    if type(value) is int and values is not None:  # sent packed (grader.sandbox.driver.packed)
        value = _packed_value(values, dtype, shape, value)
    if value is not None and (
        type(value) is not torch.Tensor or list(value.shape) != shape or value.numel() > tracer.MAX_VALUE
    ):
        raise TraceError("bad node value")
    origin = data.get("origin")
    if origin is not None and (type(origin) is not int or not 0 <= origin < index):
        raise TraceError("bad node origin")
    return Node(index, op, tuple(shape), dtype, value, origin)


def _op(index: int, data: Any, nodes: list[Node], calls: int) -> Op:
    if not _keys(data, _OP_KEYS, {"failed"}) or data.get("failed", True) is not True:
        raise TraceError("bad op")
    if type(data["name"]) is not str or type(data["call"]) is not int or not -1 <= data["call"] < max(calls, 1):
        raise TraceError("bad op")
    if type(data["stack"]) is not list or not 1 <= len(data["stack"]) <= tracer.MAX_STACK:
        raise TraceError("bad op stack")
    if type(data["args"]) is not list or type(data["kwargs"]) is not dict or len(data["kwargs"]) > tracer.MAX_ARGS:
        raise TraceError("bad op arguments")
    outputs = _int_list(data["out"], tracer.MAX_ARGS, len(nodes))
    for output in outputs:
        if output >= 0 and nodes[output].op != index:
            raise TraceError("output made by another op")
    return Op(
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


def _call(index: int, data: Any, nodes: int) -> Call:
    if not _keys(data, _CALL_KEYS, {"returned"}) or type(data.get("returned", 0)) is not int:
        raise TraceError("bad call")
    if (
        type(data["function"]) is not str
        or not (data["file"] is None or type(data["file"]) is str)
        or type(data["line"]) is not int
        or type(data["args"]) is not dict
    ):
        raise TraceError("bad call")
    args = {str(k)[:MAX_NAME]: _argument(v, nodes) for k, v in list(data["args"].items())[: tracer.MAX_ARGS]}
    return Call(
        index,
        data["function"][:MAX_NAME],
        data["file"],
        data["line"],
        args,
        tuple(i for i in _int_list(data["result"], tracer.MAX_ARGS, nodes) if i >= 0),
        data.get("returned", 0),
    )


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
