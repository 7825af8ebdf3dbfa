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
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import torch

from grader.diagnosis.trace_documents import Trace

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


@lru_cache(maxsize=4096)
def _boundaries(shape: tuple[int, ...]) -> frozenset[int]:
    return frozenset(itertools.accumulate(shape, lambda a, b: a * b)) if shape else frozenset()


@lru_cache(maxsize=4096)
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


@dataclass(frozen=True)
class _Sums:
    """What any layout of a tensor keeps, in plain numbers: a cheap necessary condition for `close`
    of two sorted value lists (each element within ATOL + RTOL * |largest|, so the sums too)."""

    finite: float  # the sum of the finite values
    largest: float  # the largest finite magnitude
    count: int  # how many finite values
    special: tuple[int, int, int]  # how many −∞, +∞, NaN

    @staticmethod
    def of(ordered: torch.Tensor) -> _Sums:
        finite = torch.isfinite(ordered)
        values = ordered[finite]
        special = (int((ordered == -math.inf).sum()), int((ordered == math.inf).sum()), int(ordered.isnan().sum()))
        return _Sums(
            float(values.sum()) if values.numel() else 0.0,
            float(values.abs().max()) if values.numel() else 0.0,
            int(values.numel()),
            special,
        )

    def may_match(self, other: _Sums) -> bool:
        if self.special != other.special or self.count != other.count:
            return False
        slack = self.count * (ATOL + RTOL * max(self.largest, other.largest)) * 1.01 + 1e-9
        return abs(self.finite - other.finite) <= slack


_PREPARED: OrderedDict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, _Sums]] = OrderedDict()
MAX_PREPARED = 4096  # tensors of at most MAX_VALUE elements each (grader.probes.tracer)


def _prepared(value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, _Sums]:
    """`value` comparable, its values sorted and their sums: computed once per tensor (a trace's
    nodes are looked at by many checkpoints, the reference's by every student)."""
    known = _PREPARED.get(id(value))
    if known is not None and known[0] is value:
        _PREPARED.move_to_end(id(value))
        return known[1], known[2], known[3]
    comparable_value = comparable(value)
    ordered = torch.sort(comparable_value.flatten()).values
    sums = _Sums.of(ordered)
    _PREPARED[id(value)] = (value, comparable_value, ordered, sums)  # the key's tensor kept alive
    if len(_PREPARED) > MAX_PREPARED:
        _PREPARED.popitem(last=False)
    return comparable_value, ordered, sums


class _Entry:
    """A node of the trace; its comparable value, sorted values and sums made when first needed
    (most nodes are never compared: no checkpoint has their size)."""

    def __init__(self, node: int, made: bool, raw: torch.Tensor):
        self.node = node
        self.made = made  # by an op of the trace (not a tensor that came in from outside)
        self._raw = raw
        self._prepared: tuple[torch.Tensor, torch.Tensor, _Sums] | None = None

    def _get(self) -> tuple[torch.Tensor, torch.Tensor, _Sums]:
        if self._prepared is None:
            self._prepared = _prepared(self._raw)
        return self._prepared

    @property
    def value(self) -> torch.Tensor:  # comparable
        return self._get()[0]

    @property
    def ordered(self) -> torch.Tensor:  # its values sorted (a layout-free fingerprint)
        return self._get()[1]

    @property
    def sums(self) -> _Sums:
        return self._get()[2]


class Finder:
    """The live tensors of a trace with recorded values, looked up by value."""

    def __init__(self, trace: Trace, nodes: set[int] | frozenset[int] | None = None):
        allowed = trace.live if nodes is None else nodes
        self.by_size: dict[int, list[_Entry]] = {}
        for node in trace.nodes:
            if node.value is None or node.index not in allowed or node.value.is_complex():
                continue
            self.by_size.setdefault(node.value.numel(), []).append(_Entry(node.index, node.op >= 0, node.value))

    def find(
        self, value: torch.Tensor, kind: str = FREE, sliced: bool = True, exclude: frozenset[int] = frozenset()
    ) -> tuple[int, ...] | None:
        """The node(s) holding `value`: one node, or one per slice along some dimension; else None.
        Nodes in `exclude` do not count."""
        if value.numel() not in self.by_size and not sliced:
            return None
        value, ordered, sums = _prepared(value)
        whole = self._find_whole(value, kind, exclude, ordered, sums)
        if whole is not None:
            return (whole,)
        if not sliced:
            return None
        last = value.dim() - 2 if kind == ATTENTION else value.dim() - 1
        for dim in range(max(last, 0)):
            size = value.shape[dim]
            if not 1 < size <= MAX_SLICED or value.numel() // size not in self.by_size:
                continue
            parts = []
            for i in range(size):
                part = value.select(dim, i)
                ordered = torch.sort(part.flatten()).values
                found = self._find_whole(part, kind, exclude, ordered, _Sums.of(ordered))
                if found is None:
                    break
                parts.append(found)
            if len(parts) == size:
                return tuple(parts)
        return None

    def _find_whole(
        self, value: torch.Tensor, kind: str, exclude: frozenset[int], ordered: torch.Tensor, sums: _Sums
    ) -> int | None:
        """`value` (comparable; `ordered` its sorted values, `sums` theirs) among the entries."""
        entries = self.by_size.get(value.numel())
        if not entries:
            return None
        leaf = None
        for entry in entries:
            if (
                entry.node not in exclude
                and entry.sums.may_match(sums)
                and close(entry.ordered, ordered)
                and same_tensor(entry.value, value, kind)
            ):
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
            if (
                divisor > 0
                and float((ratios - divisor).abs().max()) <= 1e-3 * divisor
                and all(abs(divisor / f - 1) > 1e-6 for f in found)
            ):
                found.append(divisor)
        return found
