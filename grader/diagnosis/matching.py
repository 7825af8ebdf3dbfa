"""Whether two probe outputs (or errors) are the same, within the tolerance the diagnosis matches by."""

from __future__ import annotations

from typing import Any

import torch

from grader.records import ProbeError

MATCH_ATOL = 1e-4


def same(a: Any, b: Any) -> bool:
    """Outputs (or errors) equal up to a small tolerance."""
    if isinstance(a, ProbeError) or isinstance(b, ProbeError):
        return (
            isinstance(a, ProbeError)
            and isinstance(b, ProbeError)
            and a.kind == b.kind
            and a.exc_type == b.exc_type
            and a.message == b.message
            and a.key == b.key
        )
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
            return False
        if a.dtype != b.dtype:
            a, b = a.double(), b.double()
        # equal_nan: a NaN only matches a NaN, an infinity only the same infinity; equal tensors
        # (about half of a class's comparisons) cost a thirtieth of allclose's time
        return torch.equal(a, b) or torch.allclose(a, b, atol=MATCH_ATOL, rtol=1e-3, equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
