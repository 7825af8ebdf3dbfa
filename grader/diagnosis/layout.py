"""Finding a value among the tensors a trace recorded, allowing another layout of the same tensor.

A checkpoint of the reference (e.g. the scores, (b, heads, T, T)) counts as produced by the student
when one of their live tensors holds the same values, possibly:
- with its dimensions in another order and adjacent ones merged or split (the heads as a batch
  dimension, (b, T, heads, head_dim) instead of (b, heads, T, head_dim), einsum's own order...),
  except that the query and key axes of an attention matrix keep their order;
- one head (or batch entry) at a time: every slice along one dimension found somewhere.
Masked entries compare as −∞ whatever large negative number filled them (−1e9, finfo.min).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from grader.diagnosis.traces import Trace

RTOL = 1e-4
ATOL = 1e-5
VERY_NEGATIVE = -1e4  # a masked score, however it was written
MAX_SLICED = 16

# how a checkpoint may be laid out: exactly; any order of its dimensions; any order that keeps an
# attention matrix's query axis before its key axis; or its own order, dimensions merged or split
EXACT, FREE, ATTENTION, ORDERED = "exact", "free", "attention", "ordered"


def comparable(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().to(torch.float64)
    return t.masked_fill(t < VERY_NEGATIVE, -math.inf)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within the suites' tolerances; NaN matches NaN, −∞ matches −∞."""
    if a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    infinite = torch.isinf(a) | torch.isinf(b)
    if bool(infinite.any()):
        if not torch.equal(a[infinite], b[infinite]):
            return False
        a, b = a[~infinite], b[~infinite]
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))


def _boundaries(shape: tuple[int, ...]) -> set[int]:
    return set(itertools.accumulate(shape, lambda a, b: a * b)) if shape else set()


def _aligned(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """One shape is the other with adjacent dimensions merged (or split): no element changes row."""
    pa, pb = _boundaries(tuple(n for n in a if n != 1)), _boundaries(tuple(n for n in b if n != 1))
    return pa <= pb or pb <= pa


def _orders(dims: int, kind: str) -> list[tuple[int, ...]]:
    if kind == ORDERED:
        return [tuple(range(dims))]
    orders = list(itertools.permutations(range(dims))) if dims <= 5 else [tuple(range(dims))]
    if kind == ATTENTION and dims >= 2:
        orders = [p for p in orders if p.index(dims - 2) < p.index(dims - 1)]
    return orders


def same_tensor(student: torch.Tensor, reference: torch.Tensor, kind: str) -> bool:
    """`student` holds `reference`'s values in a layout `kind` allows (both already `comparable`)."""
    if student.numel() != reference.numel():
        return False
    if kind == EXACT:
        return close(student, reference)
    shape = tuple(student.shape)
    for order in _orders(reference.dim(), kind):
        permuted = reference.permute(order)
        if not _aligned(tuple(permuted.shape), shape):
            continue
        if close(student, permuted.reshape(shape)):
            return True
    return False


@dataclass
class _Entry:
    node: int
    made: bool  # by an op of the trace (not a tensor that came in from outside)
    value: torch.Tensor  # comparable
    ordered: torch.Tensor  # its values sorted (a layout-free fingerprint)


class Finder:
    """The live tensors of a trace with recorded values, looked up by value."""

    def __init__(self, trace: Trace, nodes: set[int] | frozenset[int] | None = None):
        allowed = trace.live if nodes is None else nodes
        self.by_size: dict[int, list[_Entry]] = {}
        for node in trace.nodes:
            if node.value is None or node.index not in allowed or node.value.is_complex():
                continue
            value = comparable(node.value)
            self.by_size.setdefault(value.numel(), []).append(
                _Entry(node.index, node.op >= 0, value, torch.sort(value.flatten()).values))

    def find(self, value: torch.Tensor, kind: str = FREE, sliced: bool = True,
             exclude: frozenset[int] = frozenset()) -> tuple[int, ...] | None:
        """The node(s) holding `value`: one node, or one per slice along some dimension; else None.
        Nodes in `exclude` do not count."""
        value = comparable(value)
        whole = self._find_whole(value, kind, exclude)
        if whole is not None:
            return (whole,)
        if not sliced:
            return None
        last = value.dim() - 2 if kind == ATTENTION else value.dim() - 1
        for dim in range(max(last, 0)):
            size = value.shape[dim]
            if not 1 < size <= MAX_SLICED or value.numel() // size not in self.by_size:
                continue
            parts = [self._find_whole(value.select(dim, i), kind, exclude) for i in range(size)]
            if all(p is not None for p in parts):
                return tuple(parts)  # type: ignore[arg-type]
        return None

    def _find_whole(self, value: torch.Tensor, kind: str, exclude: frozenset[int] = frozenset()) -> int | None:
        entries = self.by_size.get(value.numel())
        if not entries:
            return None
        ordered = torch.sort(value.flatten()).values
        leaf = None
        for entry in entries:
            if entry.node not in exclude and close(entry.ordered, ordered) and same_tensor(entry.value, value, kind):
                if entry.made:
                    return entry.node
                leaf = entry.node if leaf is None else leaf
        return leaf

    def divisors(self, base: torch.Tensor) -> list[float]:
        """Numbers c such that some tensor holds `base / c` (in some layout): how a student scaled."""
        base = comparable(base)
        ordered = torch.sort(base.flatten()).values
        found: list[float] = []
        for entry in self.by_size.get(base.numel(), []):
            a, b = ordered, entry.ordered
            finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
            if not torch.equal(finite_a, finite_b):
                continue
            a, b = a[finite_a], b[finite_b]
            keep = (a.abs() > 1e-9) & (b.abs() > 1e-9)
            if int(keep.sum()) < 2:
                continue
            ratios = a[keep] / b[keep]
            divisor = float(ratios.median())
            if divisor > 0 and float((ratios - divisor).abs().max()) <= 1e-3 * divisor \
                    and all(abs(divisor / f - 1) > 1e-6 for f in found):
                found.append(divisor)
        return found
