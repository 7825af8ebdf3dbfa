"""Comparisons for the hidden suites. A failure raises `Mismatch`, which carries a structured
`Detail` (a message-catalogue key, its parameters and small expected/actual tables) instead of text."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch

from grader.records import Detail

TABLE_ROWS = 8
TABLE_COLS = 8


class Mismatch(AssertionError):
    def __init__(self, detail: Detail):
        super().__init__(detail.key)
        self.detail = detail


def fail(key: str, **params: Any) -> None:
    raise Mismatch(Detail(key, params))


def expect(condition: bool, key: str, **params: Any) -> None:
    """A property check: fails with catalogue message `key` when `condition` is false."""
    if not condition:
        fail(key, **params)


def _table(t: torch.Tensor) -> list:
    """A small 2-D (or 1-D) slice of a tensor for display, rounded to 4 decimals."""
    while t.dim() > 2:
        t = t[0]
    if t.dim() == 0:
        return [[round(float(t), 4)]]
    if t.dim() == 1:
        t = t.unsqueeze(0)
    t = t[:TABLE_ROWS, :TABLE_COLS].double()
    return [[round(float(v), 4) for v in row] for row in t]


def _shape(value: Any) -> list[int]:
    return list(value.shape)


def expect_tensor(actual: Any, *, what: str) -> torch.Tensor:
    """`actual` as a tensor of real numbers: a complex one fails here, never compared through a cast
    that would drop its imaginary part."""
    if type(actual) is not torch.Tensor:
        fail("mismatch.not-tensor", what=what, got=type(actual).__name__)
    if actual.is_complex():
        fail("mismatch.complex", what=what, got=str(actual.dtype).removeprefix("torch."))
    return actual


def expect_shape(actual: Any, shape: tuple[int, ...] | list[int], *, what: str, on: str = "") -> None:
    actual = expect_tensor(actual, what=what)
    if list(actual.shape) != list(shape):
        fail("mismatch.shape", what=what, on=on, expected=list(shape), got=_shape(actual))


def expect_close(
    actual: Any,
    expected: torch.Tensor,
    *,
    what: str,
    on: str = "",
    atol: float = 1e-5,
    rtol: float = 1e-4,
    check_dtype: bool = False,
) -> None:
    """`actual` equals `expected` within tolerances, with the same shape (dtype only if asked)."""
    expect_shape(actual, expected.shape, what=what, on=on)
    if check_dtype and actual.dtype != expected.dtype:
        fail("mismatch.dtype", what=what, on=on, expected=str(expected.dtype), got=str(actual.dtype))
    if not torch.is_floating_point(actual) and torch.is_floating_point(expected):
        actual = actual.to(expected.dtype)
    # torch.allclose is torch.testing.assert_close's own check for two dense CPU tensors of one
    # dtype and shape, without its bookkeeping (a tenth of the time); equal tensors (about half of a
    # class's) pass by torch.equal, a thirtieth of allclose's time (a NaN is equal to nothing)
    converted = actual.to(expected.dtype)
    if torch.equal(converted, expected) or torch.allclose(converted, expected, atol=atol, rtol=rtol, equal_nan=False):
        return
    a, e = actual.to(torch.float64), expected.to(torch.float64)
    differs = ~torch.isclose(a, e, atol=atol, rtol=rtol)
    finite = torch.isfinite(a)
    max_diff = float((a - e).abs()[finite].max()) if bool(finite.any()) else math.inf
    raise Mismatch(
        Detail(
            "mismatch.nonfinite" if not bool(finite.all()) else "mismatch.values",
            {
                "what": what,
                "on": on,
                "count": int(differs.sum()),
                "total": differs.numel(),
                "max_diff": round(max_diff, 6),
                "shape": _shape(expected),
            },
            expected=_table(e),
            actual=_table(a),
            differs=_table(differs.double()),
        )
    )


def expect_consistent(actual: Any, baseline: Any, *, what: str, on: str, baseline_what: str, baseline_on: str) -> None:
    """`actual` equals `baseline`, another run of the student's own code (before a change, one
    sequence at a time...): a baseline with NaN or infinity is said to be the student's, never
    shown as an expected value."""
    baseline = expect_tensor(baseline, what=baseline_what)
    finite = (
        torch.isfinite(baseline) if torch.is_floating_point(baseline) else torch.ones_like(baseline, dtype=torch.bool)
    )
    if not bool(finite.all()):
        fail(
            "mismatch.baseline-nonfinite",
            what=baseline_what,
            on=baseline_on,
            count=int((~finite).sum()),
            total=finite.numel(),
        )
    expect_close(actual, baseline, what=what, on=on)


def expect_depends(actual: Any, baseline: Any, *, what: str, on: str, key: str = "mismatch.ignores-input") -> None:
    """The work a property is about, judged here from the student's outputs (never from anything
    their process says about itself): `actual`, their code run on changed inputs, differs from
    `baseline`, the same code on the original ones. Outputs that stay the same whatever the input
    satisfy causality or batch independence trivially: the property check fails with `key`."""
    if _indistinguishable(expect_tensor(actual, what=what), expect_tensor(baseline, what=what)):
        fail(key, what=what, on=on)


def expect_varies(batch: Any, *, what: str, on: str) -> None:
    """Different sequences of one batch (its first dimension) give different outputs."""
    batch = expect_tensor(batch, what=what)
    if batch.dim() and batch.shape[0] > 1 and all(_indistinguishable(row, batch[0]) for row in batch[1:]):
        fail("mismatch.ignores-input", what=what, on=on)


def varies(outputs: torch.Tensor) -> bool:
    """Whether the outputs differ across the tokens and sequences they were computed for (each a
    different input vector): outputs that are one constant vector everywhere are degenerate."""
    if outputs.dim() < 2 or outputs.numel() == 0:
        return False
    rows = outputs.reshape(-1, outputs.shape[-1])
    return not all(_indistinguishable(row, rows[0]) for row in rows[1:])


def _indistinguishable(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, to within float32 rounding, and finite (non-finite outputs are other checks' to judge)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not torch.is_floating_point(a):
        return torch.equal(a, b)
    finite = bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())
    return finite and torch.allclose(a, b, atol=1e-6, rtol=1e-5)


def expect_cases(cases: list[tuple[Any, torch.Tensor, str, str]], **tolerances: Any) -> None:
    """Each case (actual, expected, what, on) compared like `expect_close`; the first that differs
    fails the check, and its message says which inputs fail and which pass (batched or not)."""
    # the mismatches' details only: a caught exception kept here would hold this frame through its
    # traceback, and with it the test's frame and the student's outputs, in a cycle only the
    # garbage collector frees
    failed: list[Detail] = []
    passing: list[str] = []
    for actual, expected, what, on in cases:
        try:
            expect_close(actual, expected, what=what, on=on, **tolerances)
        except Mismatch as mismatch:
            failed.append(mismatch.detail)
        else:
            passing.append(on)
    if failed:
        first = failed[0]
        failing = list(dict.fromkeys(detail.params.get("on", "") for detail in failed))
        passing = [on for on in dict.fromkeys(passing) if on not in failing]
        if len(failing) + len(passing) > 1:
            first = replace(first, params={**first.params, "failing": failing, "passing": passing})
        raise Mismatch(first)


def expect_equal(actual: Any, expected: Any, *, what: str, on: str = "") -> None:
    """Plain values (ints, strings, lists of them)."""
    if actual != expected:
        fail("mismatch.value", what=what, on=on, expected=expected, got=actual)


def judged_against(actual: Any, expected: torch.Tensor, own: Any, *, own_must_vary: bool = True) -> torch.Tensor | None:
    """What `actual` (later code's output) is judged against: the reference's `expected`, or `own`,
    what the student's own earlier class gives in its place (a probe's output made with it, e.g.
    their CausalAttention for a wrapper's heads), when that differs from the reference's (the earlier
    class is wrong, and is charged in its own section) and `actual` does not match the reference
    (any correct later code passes). None: `actual` is exactly what the student's own earlier code
    gives, NaN where it gives NaN, and passes (a NaN is never shown as an expected value).
    Own outputs that do not vary (zeros, one constant) leave no evidence that the later code uses the
    earlier class: it is then judged against the reference (a module that does nothing earns nothing),
    unless `own_must_vary` is False: where the later code is the earlier class itself, only built
    (Exercise 3.3 configures the student's MultiHeadAttention), its outputs are that class's, however
    little they vary, and a degenerate forward is charged in the earlier section."""
    if type(own) is not torch.Tensor or not torch.is_floating_point(own) or (own_must_vary and not varies(own)):
        return expected
    if _close(own, expected) or _close(actual, expected):
        return expected
    if _close(actual, own, equal_nan=True):
        return None
    return own if own.shape == expected.shape and bool(torch.isfinite(own).all()) else expected


def _close(
    actual: Any, expected: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4, equal_nan: bool = False
) -> bool:
    return (
        type(actual) is torch.Tensor
        and actual.shape == expected.shape
        and torch.is_floating_point(actual)
        and bool(torch.allclose(actual.to(expected.dtype), expected, atol=atol, rtol=rtol, equal_nan=equal_nan))
    )


def side_by_side(outputs: Any) -> torch.Tensor | None:
    """A list of tensors (one per head) joined along the last dimension; None when it is not one."""
    if type(outputs) is not list or not outputs or any(type(item) is not torch.Tensor for item in outputs):
        return None
    try:
        return torch.cat(outputs, dim=-1)
    except (RuntimeError, TypeError):
        return None


def unchanged_before(out: Any, changed: Any, keep: int) -> bool:
    """Whether the outputs before position `keep` are the same for both inputs (finite, same shape)."""
    return (
        type(out) is torch.Tensor
        and type(changed) is torch.Tensor
        and out.shape == changed.shape
        and out.dim() == 3
        and bool(torch.isfinite(out).all() and torch.isfinite(changed).all())
        and bool(torch.allclose(out[:, :keep], changed[:, :keep], atol=1e-5, rtol=1e-4))
    )


def follows_own_non_causal(got: Any, own_out: Any, own_changed: Any, keep: int) -> bool:
    """The later code's outputs (`got["out"]`, `got["changed"]`) are exactly what the student's own
    earlier code gives on both inputs, and that code is not causal: the later code is as causal as
    what it is built from, and the mistake is charged to the earlier section only."""
    if own_out is None or own_changed is None or unchanged_before(own_out, own_changed, keep):
        return False  # (a causal own code of another shape than the reference's: judged as usual)
    return _close(got.get("out"), own_out, equal_nan=True) and _close(got.get("changed"), own_changed, equal_nan=True)


def same_values(actual: Any, expected: Any) -> bool:
    """Two float tensors of one shape that agree within tolerances, NaN where the other has NaN."""
    return (
        type(expected) is torch.Tensor
        and torch.is_floating_point(expected)
        and _close(actual, expected, equal_nan=True)
    )
