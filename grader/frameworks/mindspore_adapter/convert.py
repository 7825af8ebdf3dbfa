"""Values across the framework boundary, always copied through numpy: torch -> MindSpore for the
arguments of student code, MindSpore -> torch (plain tensors) for what it returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from grader.probes import ContractError

MAX_DEPTH = 8


def ms_tensor(value: torch.Tensor) -> Any:
    import mindspore

    return mindspore.Tensor(np.array(value.detach().cpu().numpy(), copy=True))


def torch_tensor(value: Any) -> torch.Tensor:
    """A plain torch copy of a mindspore.Tensor (a Parameter included)."""
    try:
        array = np.array(value.asnumpy(), copy=True)
        return torch.from_numpy(array)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ContractError("contract.not-a-tensor", what="mindspore.Tensor", got=str(exc)[:80]) from None


def is_ms_tensor(value: Any) -> bool:
    import mindspore

    return isinstance(value, mindspore.Tensor)


def to_ms(value: Any, cell_of: Callable[[Any], Any], depth: int = 0) -> Any:
    """Arguments for MindSpore code: torch tensors become mindspore.Tensor, facades their Cell."""
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, torch.Tensor):
        return ms_tensor(value)
    cell = cell_of(value)
    if cell is not None:
        return cell
    if isinstance(value, (list, tuple)):
        return type(value)(to_ms(item, cell_of, depth + 1) for item in value)
    if isinstance(value, dict):
        return {key: to_ms(item, cell_of, depth + 1) for key, item in value.items()}
    return value


def to_torch(value: Any, wrap_cell: Callable[[Any], Any], depth: int = 0) -> Any:
    """What MindSpore code returned, for the probes: torch tensors, facades for Cells."""
    if depth > MAX_DEPTH:
        return value
    import mindspore

    if isinstance(value, mindspore.Tensor):
        return torch_tensor(value)
    if isinstance(value, mindspore.nn.Cell):
        return wrap_cell(value)
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(item, wrap_cell, depth + 1) for item in value)
    if isinstance(value, dict):
        return {key: to_torch(item, wrap_cell, depth + 1) for key, item in value.items()}
    return value


MS_DTYPES = {torch.float64: "float64", torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def ms_dtype(dtype: torch.dtype) -> Any:
    import mindspore

    return getattr(mindspore, MS_DTYPES[dtype]) if dtype in MS_DTYPES else None
