"""The wire format of probe results: JSON for structure, raw bytes for tensors. No pickle anywhere.

Encoded by the sandboxed child, decoded by the trusted grader. Decoding builds only plain
`torch.Tensor`s (from a whitelist of dtypes, with the byte count checked against the shape), dicts
with string keys, lists, strings, numbers, booleans and None. It is both safer than any pickle
(nothing in the payload can name a class or a function) and about ten times faster than
`torch.save`/`torch.load(weights_only=True)` for the small tensors probes return.

Layout: 4-byte big-endian length of the JSON document, the JSON document, then the tensors' bytes
in order. A tensor is {"$t": [dtype, shape, offset, nbytes]} in the JSON; a dict that would
collide with that marker is rejected when encoding.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
NAMES = {dtype: name for name, dtype in DTYPES.items()}
ITEM_BYTES = {name: torch.empty((), dtype=dtype).element_size() for name, dtype in DTYPES.items()}
MARK = "$t"
MAX_DEPTH = 10
MAX_DIMS = 8
MAX_JSON = 4 * 1024 * 1024


class CodecError(ValueError):
    """The payload is not a well-formed probe result."""


def encode(value: Any) -> bytes:
    chunks: list[bytes] = []
    offset = 0

    def walk(item: Any, depth: int) -> Any:
        nonlocal offset
        if depth > MAX_DEPTH:
            raise CodecError("nested too deeply")
        if isinstance(item, torch.Tensor):
            record, data = _tensor_record(item, offset)
            chunks.append(data)
            offset += len(data)
            return record
        if item is None or type(item) in (bool, int, str):
            return item
        if type(item) is float:
            return item if math.isfinite(item) else {"$f": repr(item)}
        if isinstance(item, (list, tuple)):
            return [walk(x, depth + 1) for x in item]
        if isinstance(item, dict):
            if MARK in item or "$f" in item:
                raise CodecError("reserved key")
            return {str(k): walk(v, depth + 1) for k, v in item.items()}
        raise CodecError(f"unsupported {type(item).__name__}")

    structure = walk(value, 0)
    try:
        document = json.dumps(structure, allow_nan=False).encode()
    except ValueError as exc:  # an int too long to write as text (sys.get_int_max_str_digits)
        raise CodecError("unsupported number") from exc
    return b"".join([struct.pack(">I", len(document)), document, *chunks])


def encode_plain(value: Any) -> bytes:
    """`encode` for a document built of exact JSON types and tensors only (the tracer's: grader.probes.tracer
    makes every string, number and list itself), in one `json.dumps`: the same bytes as `encode`,
    or its CodecError, for anything. Whatever json.dumps would write otherwise than `encode` is
    left to `encode`: a subclass of str, int, float, list or dict, a key that is not a string
    (json.dumps writes True as "true", `encode` as "True") or is a marker, a value nested deeper
    than MAX_DEPTH, a NaN, an int too long to write."""
    if not _exact(value, 0):
        return encode(value)
    chunks: list[bytes] = []
    offset = 0

    def tensor(item: Any) -> Any:
        nonlocal offset
        if not isinstance(item, torch.Tensor):
            raise TypeError(type(item).__name__)
        record, data = _tensor_record(item, offset)
        chunks.append(data)
        offset += len(data)
        return record

    try:
        document = json.dumps(value, allow_nan=False, default=tensor).encode()
    except (TypeError, ValueError, CodecError):
        return encode(value)
    return b"".join([struct.pack(">I", len(document)), document, *chunks])


def _exact(item: Any, depth: int) -> bool:
    """Whether json.dumps writes `item` as `encode` does: exact JSON types, string keys that are no
    markers, tensors, nested no deeper than `encode` allows."""
    kind = type(item)
    if depth > MAX_DEPTH or (depth == MAX_DEPTH and kind in (dict, list, tuple) and item):
        return False  # `encode` refuses any value deeper than MAX_DEPTH, a leaf as well
    if kind is dict:
        if MARK in item or "$f" in item:
            return False
        for key, value in item.items():
            if type(key) is not str or (type(value) not in _SCALARS and not _exact(value, depth + 1)):
                return False
        return True
    if kind is list or kind is tuple:
        for value in item:  # noqa: SIM110 - a loop, not all() of a generator: the codec's hot path
            if type(value) not in _SCALARS and not _exact(value, depth + 1):
                return False
        return True
    return kind in _SCALARS or isinstance(item, torch.Tensor)


_SCALARS = frozenset({type(None), bool, int, float, str})  # leaves, at most MAX_DEPTH deep


def _tensor_record(item: torch.Tensor, offset: int) -> tuple[dict, Any]:
    """A tensor's record in the JSON document and its bytes (a view, copied once into the payload)."""
    tensor = item.detach()
    if type(tensor) is not torch.Tensor:
        tensor = tensor.as_subclass(torch.Tensor)
    if tensor.dtype not in NAMES or tensor.layout != torch.strided or tensor.dim() > MAX_DIMS:
        raise CodecError(f"unsupported tensor {tensor.dtype} {tensor.layout}")
    tensor = tensor.cpu().contiguous()
    data = tensor.reshape(-1).view(torch.uint8).numpy() if tensor.numel() else b""
    return {MARK: [NAMES[tensor.dtype], list(tensor.shape), offset, len(data)]}, data


def decode(payload: bytes | bytearray, max_json: int = MAX_JSON) -> Any:
    """The value `encode` was given, rebuilt from data only; CodecError on anything malformed.
    `max_json` caps the JSON document (it decides how many Python objects decoding makes)."""
    if len(payload) < 4:
        raise CodecError("truncated")
    (size,) = struct.unpack(">I", payload[:4])
    if size > max_json or 4 + size > len(payload):
        raise CodecError("bad document length")
    try:
        document = json.loads(bytes(payload[4 : 4 + size]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CodecError("bad document") from exc
    blob = memoryview(payload)[4 + size :]
    if type(document) is list or type(document) is dict:
        return _rebuilt(document, 0, blob)
    return document


_CONTAINERS = frozenset({list, dict})


def _rebuilt(item: list | dict, depth: int, blob: memoryview) -> Any:
    """A decoded JSON container with its tensor and float records rebuilt (in place: json.loads made
    it, nothing else holds it); CodecError for a value nested deeper than MAX_DEPTH, a leaf as well
    (a container at depth MAX_DEPTH may only be empty, a tensor or a float record). json.loads makes
    only dicts with string keys, lists, strings, numbers, booleans and None; scalars are skipped
    without a Python call each (most of a tracer's document is numbers and short lists of them)."""
    if depth > MAX_DEPTH:
        raise CodecError("nested too deeply")
    if type(item) is dict:
        if MARK in item:
            return _tensor(item[MARK], blob)
        if "$f" in item:
            value = item["$f"]
            if len(item) != 1 or type(value) is not str or value not in ("nan", "inf", "-inf"):
                raise CodecError("bad float")
            return float(value)
        if item and depth == MAX_DEPTH:
            raise CodecError("nested too deeply")
        if not _CONTAINERS.isdisjoint(map(type, item.values())):
            for key, value in item.items():
                if type(value) is list or type(value) is dict:
                    item[key] = _rebuilt(value, depth + 1, blob)
        return item
    if item and depth == MAX_DEPTH:
        raise CodecError("nested too deeply")
    if not _CONTAINERS.isdisjoint(map(type, item)):
        for index, value in enumerate(item):
            if type(value) is list or type(value) is dict:
                item[index] = _rebuilt(value, depth + 1, blob)
    return item


def _tensor(spec: Any, blob: memoryview) -> torch.Tensor:
    if type(spec) is not list or len(spec) != 4:
        raise CodecError("bad tensor record")
    name, shape, offset, nbytes = spec
    if (
        type(name) is not str
        or name not in DTYPES
        or type(shape) is not list
        or len(shape) > MAX_DIMS
        or any(type(n) is not int or n < 0 for n in shape)
        or type(offset) is not int
        or type(nbytes) is not int
        or offset < 0
        or nbytes < 0
        or offset + nbytes > len(blob)
    ):
        raise CodecError("bad tensor record")
    dtype = DTYPES[name]
    numel = math.prod(shape)
    if numel * ITEM_BYTES[name] != nbytes:
        raise CodecError("tensor size does not match its shape")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(blob[offset : offset + nbytes]), dtype=dtype).reshape(shape)
