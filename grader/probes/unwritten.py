"""Which memory the code under test made uninitialised (torch.empty) and has not written since.

Such memory holds whatever was there before, which differs from run to run: the tracer
(grader/probes/tracer.py) records no value for a tensor that shows any of it, whether the tensor
is the one torch.empty made, a view of it, or a Parameter that wraps it. Memory counts as written
once an in-place op (`copy_`, `uniform_`, `out[i] = ...`, an `out=` argument...) writes it, element
by element: a preallocated output filled row by row shows no value until its last row is in.

Kept per storage (by its address): a mask of its elements, True where written. A view finds its
elements in the mask by its own shape, strides and offset. Whatever cannot be followed exactly
(a view of another element size, an index the mask cannot take) errs on the side of "not
written" for reading and "written" for the write, so a value is never recorded from memory
nobody wrote, and a tensor is never left without a value for long. Sandbox code: imports only
torch.
"""

from __future__ import annotations

from typing import Any

import torch

RESIZING = frozenset({"resize_", "resize_as_"})  # in-place ops that may leave new elements uninitialised


def storage_of(tensor: torch.Tensor) -> int:
    """The address of a tensor's storage; -1 for a tensor without one (or with no elements)."""
    try:
        return tensor.untyped_storage().data_ptr() if tensor.numel() else -1
    except Exception:  # noqa: BLE001 - tensors without storage
        return -1


class UnwrittenMemory:
    def __init__(self) -> None:
        # storage address -> (element size, written mask: None while nothing of it is written)
        self._entries: dict[int, tuple[int, torch.Tensor | None]] = {}

    def __bool__(self) -> bool:
        """Whether any memory is unwritten (else nothing needs a look)."""
        return bool(self._entries)

    def made(self, tensor: torch.Tensor) -> None:
        """`tensor` was made by an op that leaves its memory uninitialised."""
        storage = storage_of(tensor)
        if storage != -1:
            self._entries[storage] = (tensor.element_size(), None)

    def blank(self, tensor: torch.Tensor) -> bool:
        """Whether `tensor` shows any element that was never written."""
        entry = self._entries.get(storage_of(tensor))
        if entry is None:
            return False
        size, written = entry
        if written is None:
            return True  # nothing of its storage written yet (and the tensor has elements)
        view = self._view(tensor, size, written)
        return view is None or not bool(view.all())

    def written(self, target: torch.Tensor, before: int, name: str, key: Any = None) -> None:
        """An op called `name` wrote to `target`, whose storage was at address `before` (`key`: the
        index of a `__setitem__`)."""
        after = storage_of(target)
        if after != before or name in RESIZING:  # moved (set_) or resized: the old address is free
            self._entries.pop(before, None)
            if name in RESIZING:
                self.made(target)  # what it grew by is uninitialised (what it kept is counted so too)
                return
        entry = self._entries.get(after)
        if entry is None:
            return
        size, mask = entry
        if name != "__setitem__" and _covers(target, size):
            del self._entries[after]  # the whole storage written (nn.init on a Parameter, copy_...)
            return
        if mask is None:
            mask = torch.zeros(target.untyped_storage().nbytes() // size, dtype=torch.bool)
            self._entries[after] = (size, mask)
        view = self._view(target, size, mask)
        try:
            if view is None:
                raise TypeError("cannot follow the write")
            if name == "__setitem__":
                view[key] = True
            else:
                view[...] = True
        except Exception:  # noqa: BLE001 - cannot follow the write: all of the storage counts as written
            del self._entries[after]
            return
        if bool(mask.all()):
            del self._entries[after]

    @staticmethod
    def _view(tensor: torch.Tensor, size: int, mask: torch.Tensor) -> torch.Tensor | None:
        """The mask's elements that `tensor` shows; None when they cannot be found (another element
        size, a view the mask cannot take)."""
        if tensor.element_size() != size or tensor.layout != torch.strided:
            return None
        try:
            return torch.as_strided(mask, tensor.shape, tensor.stride(), tensor.storage_offset())
        except Exception:  # noqa: BLE001
            return None


def _covers(tensor: torch.Tensor, size: int) -> bool:
    """Whether `tensor` shows every element of its storage (of `size` bytes each), each once."""
    return (
        tensor.element_size() == size
        and tensor.storage_offset() == 0
        and tensor.is_contiguous()
        and tensor.numel() * size == tensor.untyped_storage().nbytes()
    )
