"""The diagnosis finds a checkpoint's value among a trace's tensors in any layout it allows, whatever
the tensor's dtype and whatever special values it holds (−∞ or a large negative fill for a mask,
+∞, NaN), and never a value that differs beyond the suites' tolerance."""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from grader.diagnosis.trace.graph import Node, Trace
from grader.diagnosis.walk.layout import ATOL, ATTENTION, FREE, RTOL, Finder, close, comparable

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64)
SPECIALS = (-math.inf, math.inf, math.nan, -1e9)


def finder_of(*values: torch.Tensor) -> Finder:
    """A trace whose leaves hold `values` (nodes 0, 1, ...), every one of them looked at."""
    nodes = [Node(i, -1, tuple(v.shape), str(v.dtype), v, None) for i, v in enumerate(values)]
    return Finder(Trace([], nodes, [], False), nodes=frozenset(range(len(values))))


@st.composite
def tensors(draw) -> torch.Tensor:
    """A small tensor of any of DTYPES, some of its entries special (on a float dtype)."""
    values = draw(
        arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.integers(-50, 50).map(float))
    )
    flat = values.reshape(-1)
    for index in draw(st.lists(st.integers(0, flat.size - 1), max_size=3)):
        flat[index] = draw(st.sampled_from(SPECIALS))
    dtype = draw(st.sampled_from(DTYPES))
    if not dtype.is_floating_point:
        return torch.from_numpy(np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=-1.0)).to(dtype)
    return torch.from_numpy(values).to(dtype)


@settings(max_examples=200, deadline=None)
@given(tensors(), st.randoms(use_true_random=False))
def test_a_value_is_found_in_any_order_of_its_dimensions_whatever_it_holds(value, random):
    order = list(range(value.dim()))
    random.shuffle(order)
    held = value.permute(order).contiguous()
    assert finder_of(held).find(value, FREE) == (0,)
    assert finder_of(held.double()).find(value.float() if value.dtype != torch.bfloat16 else value, FREE) == (0,)


@settings(max_examples=200, deadline=None)
@given(tensors(), st.data())
def test_a_value_that_differs_beyond_the_tolerance_is_never_found(value, data):
    if not value.dtype.is_floating_point or value.dtype in (torch.float16, torch.bfloat16):
        value = value.double()
    changed = value.clone().reshape(-1)
    index = data.draw(st.integers(0, changed.numel() - 1))
    changed[index] = 1000.0 if changed[index] != 1000.0 else -1000.0
    assert finder_of(changed.reshape(value.shape)).find(value, FREE, sliced=False) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(array_shapes(min_dims=1, max_dims=3, max_side=4), min_size=1, max_size=4),
    array_shapes(min_dims=1, max_dims=4, max_side=4),
    st.sampled_from([FREE, ATTENTION]),
)
def test_a_value_no_node_may_hold_is_never_found(node_shapes, shape, kind):
    """`may_hold` (checked before a search) never rules out a value `find` would find: here every
    node holds ones, as does the value, so whatever has its size (or a slice's) may hold it."""
    finder = finder_of(*(torch.ones(s) for s in node_shapes))
    value = torch.ones(shape)
    assert finder.find(value, kind) is None or finder.may_hold(value)


def allclose_in_torch(a: torch.Tensor, b: torch.Tensor) -> bool:
    """What `close` means, in torch's own terms: infinities equal where either has one, the rest
    within `torch.allclose`'s tolerances, NaN equal to NaN."""
    infinite = torch.isinf(a) | torch.isinf(b)
    if not torch.equal(a[infinite], b[infinite]):
        return False
    return bool(torch.allclose(a[~infinite], b[~infinite], rtol=RTOL, atol=ATOL, equal_nan=True))


@settings(max_examples=300, deadline=None)
@given(tensors(), st.data())
def test_close_is_torchs_allclose_with_infinities_matched(value, data):
    """Pairs that differ nowhere, by a fraction or a multiple of the tolerance (on either side of
    its edge), or in their special values."""
    a = comparable(value)
    factors = data.draw(
        arrays(np.float64, tuple(a.shape), elements=st.sampled_from([0.0, 0.5, 0.999, 1.0, 1.001, 3.0]))
    )
    b = a + torch.from_numpy(factors) * (ATOL + RTOL * a.abs())
    b.view(-1)[: data.draw(st.integers(0, 2))] = data.draw(st.sampled_from(SPECIALS))
    b = comparable(b)
    assert close(a, b) == allclose_in_torch(a, b)
    assert close(b, a) == allclose_in_torch(b, a)
    assert close(a, a.clone())


def test_close_at_the_edges_of_the_double_range():
    huge = torch.tensor([1.7e308, -1.7e308], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not close(huge, -huge)  # their difference overflows: not close, as in torch, and quietly
    assert close(huge, huge.clone())
    assert close(torch.tensor([0.0], dtype=torch.float64), torch.tensor([ATOL], dtype=torch.float64))
    assert close(torch.tensor([ATOL], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64))


def test_a_signalling_nan_is_a_nan_quietly():
    """Memory nobody computed may hold a signalling NaN: it is found and compared as any NaN, and
    nothing warns (a warning would be an error where warnings are)."""
    signalling = {
        torch.float64: torch.tensor([0x7FF0000000000001, 0x3FF0000000000000]).view(torch.float64),
        torch.float32: torch.tensor([0x7F800001, 0x3F800000], dtype=torch.int32).view(torch.float32),
        torch.float16: torch.tensor([0x7C01, 0x3C00], dtype=torch.int16).view(torch.float16),
    }
    quiet = torch.tensor([math.nan, 1.0], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value in signalling.values():
            assert finder_of(value).find(quiet, FREE) == (0,)
            assert finder_of(quiet).find(value, FREE) == (0,)
            assert close(comparable(value), comparable(value.clone())) and close(comparable(value), quiet)


def test_a_mask_filled_with_any_large_negative_number_is_the_same_mask():
    scores = torch.randn(2, 3, 4, 4)
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    finder = finder_of(scores.masked_fill(causal, -1e9), scores.masked_fill(causal, torch.finfo(torch.float32).min))
    assert finder.find(scores.masked_fill(causal, -math.inf), ATTENTION) == (0,)  # the first of two that hold it
    assert torch.equal(
        comparable(scores.masked_fill(causal, -1e9)), comparable(scores.masked_fill(causal, -math.inf).double())
    )


def test_one_head_at_a_time_is_found_slice_by_slice():
    heads = torch.randn(2, 3, 4)  # (heads, T, head_dim)
    finder = finder_of(torch.randn(3, 4), heads[1].clone(), heads[0].clone())
    assert finder.may_hold(heads) and finder.find(heads, ATTENTION) == (2, 1)
    assert not finder.may_hold(torch.ones(5, 5)) and finder.find(torch.ones(5, 5)) is None
