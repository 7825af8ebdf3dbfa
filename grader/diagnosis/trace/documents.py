"""Traces as the trusted side holds them: validated, typed, with the dataflow graph worked out.

A trace comes from code under test (see grader.probes.tracer): it is untrusted data. `parse_trace`
accepts only the documented structure, within the tracer's own caps, with every reference in range;
anything else raises `TraceError` and the trace is ignored (the test keeps its plain feedback).
A trace only ever shapes feedback text, never a score.

Its records (`Trace`, `Op`, `Node`, `Call`, `Site`) are `grader.diagnosis.trace.graph`; reading a
document is `grader.diagnosis.trace.parse`; this module is the documents as they come from the
sandbox (`documents_of`, `Received`) and their digests (`fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from grader.diagnosis.trace.graph import LAYOUT_OPS, Call, Node, Op, Ref, Site, Trace, TraceError
from grader.diagnosis.trace.parse import parse_trace

__all__ = [
    "LAYOUT_OPS",
    "Call",
    "Node",
    "Op",
    "Received",
    "Ref",
    "Site",
    "Trace",
    "TraceError",
    "documents_of",
    "fingerprint",
    "finite_or_none",
    "parse_trace",
]


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
