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

import numpy as np
import torch

from grader.diagnosis.trace.documents import Trace

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
    """Equal within the suites' tolerances (`torch.allclose`'s test, in numpy: half the time on a
    probe's small tensors); NaN matches NaN, −∞ matches −∞. Of two `comparable` tensors."""
    if a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    x, y = a.numpy(), b.numpy()
    infinite = np.isinf(x) | np.isinf(y)
    if infinite.any():
        if not np.array_equal(x[infinite], y[infinite]):
            return False
        x, y = x[~infinite], y[~infinite]
    # quietly, as torch: a difference past the largest double is +inf (not close); a signalling NaN
    with np.errstate(over="ignore", invalid="ignore"):
        near = np.abs(x - y) <= ATOL + np.abs(RTOL * y)
    return bool(near.all() or (near | (np.isnan(x) & np.isnan(y))).all())


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
    def of(value: torch.Tensor) -> _Sums:
        """Of a comparable tensor, in any order (numpy: a few microseconds for a probe's tensor)."""
        return _Sums.of_array(value.numpy())

    @staticmethod
    def of_array(values: np.ndarray) -> _Sums:
        """Of a comparable array; all-finite values (the common case) in four numpy calls."""
        finite = values.ravel()
        special = (0, 0, 0)
        present = np.isfinite(finite)
        if not present.all():
            finite = finite[present]
            special = (
                int(np.count_nonzero(values == -math.inf)),
                int(np.count_nonzero(values == math.inf)),
                int(np.count_nonzero(np.isnan(values))),
            )
        if not finite.size:
            return _Sums(0.0, 0.0, 0, special)
        largest = float(np.abs(finite).max())
        if largest * finite.size < 1e300:  # no partial sum can pass the largest double
            total = float(finite.sum())
        else:
            with np.errstate(over="ignore"):  # a sum past the largest double is +-inf, as torch's would be
                total = float(finite.sum())
        return _Sums(total, largest, int(finite.size), special)

    def may_match(self, other: _Sums) -> bool:
        if self.special != other.special or self.count != other.count:
            return False
        slack = self.count * (ATOL + RTOL * max(self.largest, other.largest)) * 1.01 + 1e-9
        return abs(self.finite - other.finite) <= slack


class _Prepared:
    """A tensor made comparable, with its sums; its values sorted (a layout-free fingerprint) only
    when first needed: most values are told apart by their sums alone."""

    __slots__ = ("value", "sums", "_ordered")

    def __init__(self, value: torch.Tensor, sums: _Sums | None = None):
        self.value = value  # comparable
        self.sums = _Sums.of(value) if sums is None else sums
        self._ordered: torch.Tensor | None = None

    @staticmethod
    def of(value: torch.Tensor) -> _Prepared:
        """`value` made comparable (as `comparable` does, the mask in numpy: a few torch calls less)."""
        try:  # torch's own conversion (numpy's warns on a signalling NaN), a copy of the student's tensor
            array = value.detach().to(torch.float64, copy=True).numpy()
        except (TypeError, RuntimeError):  # a tensor numpy cannot share (negative bit)
            return _Prepared(comparable(value))
        array[array < VERY_NEGATIVE] = -math.inf
        return _Prepared(torch.from_numpy(array), _Sums.of_array(array))

    @property
    def ordered(self) -> torch.Tensor:
        if self._ordered is None:
            self._ordered = torch.from_numpy(np.sort(self.value.numpy(), axis=None))  # torch.sort's order, NaN last
        return self._ordered


_PREPARED: OrderedDict[int, tuple[torch.Tensor, _Prepared]] = OrderedDict()
MAX_PREPARED = 4096  # tensors of at most MAX_VALUE elements each (grader.probes.tracer)


def _prepared(value: torch.Tensor) -> _Prepared:
    """`value` comparable, with its sums: made once per tensor (a trace's nodes are looked at by many
    checkpoints, the reference's by every student)."""
    known = _PREPARED.get(id(value))
    if known is not None and known[0] is value:
        _PREPARED.move_to_end(id(value))
        return known[1]
    prepared = _Prepared.of(value)
    _PREPARED[id(value)] = (value, prepared)  # the key's tensor kept alive
    if len(_PREPARED) > MAX_PREPARED:
        _PREPARED.popitem(last=False)
    return prepared


class _Entry:
    """A node of the trace; its value prepared when first needed (most nodes are never compared: no
    checkpoint has their size)."""

    def __init__(self, node: int, made: bool, raw: torch.Tensor):
        self.node = node
        self.made = made  # by an op of the trace (not a tensor that came in from outside)
        self._raw = raw
        self._prepared: _Prepared | None = None

    @property
    def prepared(self) -> _Prepared:
        if self._prepared is None:
            self._prepared = _prepared(self._raw)
        return self._prepared


class Finder:
    """The live tensors of a trace with recorded values, looked up by value."""

    def __init__(self, trace: Trace, nodes: set[int] | frozenset[int] | None = None):
        allowed = trace.live if nodes is None else nodes
        self.by_size: dict[int, list[_Entry]] = {}
        for node in trace.nodes:
            if node.value is None or node.index not in allowed or node.value.is_complex():
                continue
            self.by_size.setdefault(node.value.numel(), []).append(_Entry(node.index, node.op >= 0, node.value))

    def may_hold(self, value: torch.Tensor) -> bool:
        """Whether some node has `value`'s size, or the size of one of its slices: only then can
        `find` find it (checked first: most values looked for have no node of their size)."""
        size = value.numel()
        return size in self.by_size or any(1 < n <= MAX_SLICED and size // n in self.by_size for n in value.shape[:-1])

    def find(
        self, value: torch.Tensor, kind: str = FREE, sliced: bool = True, exclude: frozenset[int] = frozenset()
    ) -> tuple[int, ...] | None:
        """The node(s) holding `value`: one node, or one per slice along some dimension; else None.
        Nodes in `exclude` do not count. A value is prepared (made comparable, its sums) only when
        some node has its size, or a slice's."""
        if value.numel() in self.by_size:
            whole = self._find_whole(_prepared(value), kind, exclude)
            if whole is not None:
                return (whole,)
        if not sliced:
            return None
        last = value.dim() - 2 if kind == ATTENTION else value.dim() - 1
        dims = [
            dim
            for dim in range(max(last, 0))
            if 1 < value.shape[dim] <= MAX_SLICED and value.numel() // value.shape[dim] in self.by_size
        ]
        if not dims:
            return None
        value = _prepared(value).value
        for dim in dims:
            size = value.shape[dim]
            parts = []
            for i in range(size):
                found = self._find_whole(_Prepared(value.select(dim, i)), kind, exclude)
                if found is None:
                    break
                parts.append(found)
            if len(parts) == size:
                return tuple(parts)
        return None

    def _find_whole(self, wanted: _Prepared, kind: str, exclude: frozenset[int]) -> int | None:
        """A node holding `wanted`'s values (in a layout `kind` allows), not one of `exclude`."""
        entries = self.by_size.get(wanted.value.numel())
        if not entries:
            return None
        leaf = None
        for entry in entries:
            if entry.node in exclude:
                continue
            held = entry.prepared
            if (
                held.sums.may_match(wanted.sums)
                and close(held.ordered, wanted.ordered)
                and same_tensor(held.value, wanted.value, kind)
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
            a, b = ordered, entry.prepared.ordered
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
