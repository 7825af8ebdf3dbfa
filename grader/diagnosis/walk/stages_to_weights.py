"""The stages' ways of computing, right and wrong (the table that assembles them is
`grader.diagnosis.walk.pipeline`): each takes a `state` (checkpoint name -> tensor, in the reference's
layout) and a `Context`, and returns the checkpoint's value, or None when it does not apply. Here
the records and the stages up to the attention weights (masking, scaling, normalising); the
stages after them are `grader.diagnosis.walk.stages_after_weights`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from grader.diagnosis.walk.masks import MASKS, mask_misconception, triangle  # noqa: F401 - part of this table

State = dict[str, torch.Tensor]


@dataclass
class Context:
    """What a stage needs besides earlier checkpoints."""

    hidden: torch.Tensor | None = None  # (T, T) bool: the entries the reference hides (above the diagonal)
    divisor: float | None = None  # what the reference divides the scores by (√d_k)
    heads: int = 1
    head_dim: int = 0
    out_proj: Callable[[torch.Tensor], torch.Tensor] | None = None
    dropout: Callable[[torch.Tensor], torch.Tensor] | None = None
    sizes: dict[str, int] = field(default_factory=dict)  # other sizes a wrong divisor may use (d_in, T, d_out)


@dataclass(frozen=True)
class Alternative:
    key: str  # e.g. "dim=-2"
    misconception: str | None
    fn: Callable[[State, Context], torch.Tensor | None]
    skip: bool = False  # the stage left out: its value is its input's


@dataclass(frozen=True)
class Stage:
    name: str  # the checkpoint it produces
    kind: str  # how its value may be laid out (see grader.diagnosis.walk.layout)
    right: Callable[[State, Context], torch.Tensor | None]
    alternatives: tuple[Alternative, ...] = ()
    rank: int = 0  # pipeline order; stages of one rank (queries, keys, values) come in any order
    needs: tuple[str, ...] = ()  # the checkpoints it may be computed from


# -- masks: which (query, key) pairs are hidden (grader.diagnosis.walk.masks) ---------------------------


def _hidden(ctx: Context, t: int) -> torch.Tensor:
    if ctx.hidden is not None and ctx.hidden.shape[-1] >= t:
        return ctx.hidden[..., :t, :t]
    return triangle(t, True, 1)


def _fill(scores: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    return scores.masked_fill(hidden, -torch.inf)


def _masked(hide: Callable[[int], torch.Tensor]) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        scores = state.get("scores")
        return None if scores is None else _fill(scores, hide(scores.shape[-1]))

    return fn


def masked_right(state: State, ctx: Context) -> torch.Tensor | None:
    scores = state.get("scores")
    return None if scores is None else _fill(scores, _hidden(ctx, scores.shape[-1]))


# -- scaling -------------------------------------------------------------------------------------------
def _before_scaling(state: State) -> torch.Tensor | None:
    return state.get("masked", state.get("scores"))


def scaled_right(state: State, ctx: Context) -> torch.Tensor | None:
    base = _before_scaling(state)
    return None if base is None or ctx.divisor is None else base / ctx.divisor


def _divided_by(
    size: Callable[[Context, torch.Tensor], float | None],
) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        base = _before_scaling(state)
        if base is None:
            return None
        divisor = size(ctx, base)
        return None if divisor is None or divisor == ctx.divisor else base / divisor

    return fn


def _unscaled(state: State, ctx: Context) -> torch.Tensor | None:
    return _before_scaling(state)


SCALINGS = (
    Alternative("unscaled", "missing-scaling", _unscaled, skip=True),
    Alternative("by-d_k", "wrong-scaling", _divided_by(lambda ctx, b: ctx.divisor**2 if ctx.divisor else None)),
    Alternative("by-sqrt-tokens", "wrong-scaling", _divided_by(lambda ctx, b: b.shape[-1] ** 0.5)),
    Alternative("by-sqrt-d_out", "wrong-scaling", _divided_by(lambda ctx, b: ctx.sizes.get("d_out", 0) ** 0.5 or None)),
    Alternative("by-sqrt-d_in", "wrong-scaling", _divided_by(lambda ctx, b: ctx.sizes.get("d_in", 0) ** 0.5 or None)),
    Alternative(
        "times-sqrt-d_k", "wrong-scaling", _divided_by(lambda ctx, b: 1 / ctx.divisor if ctx.divisor else None)
    ),
    # another operation than a division: the square root of the scores (NaN where a score is negative)
    Alternative("root-of-scores", "wrong-scaling", lambda s, c: _root(_before_scaling(s))),
)


def _root(base: torch.Tensor | None) -> torch.Tensor | None:
    return None if base is None or not base.is_floating_point() else base**0.5


# -- normalising ---------------------------------------------------------------------------------------
def _logits(state: State) -> torch.Tensor | None:
    return state.get("scaled", state.get("masked", state.get("scores")))


def weights_right(state: State, ctx: Context) -> torch.Tensor | None:
    logits = _logits(state)
    return None if logits is None else torch.softmax(logits, dim=-1)


def _softmax_over(dim: int) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        logits = _logits(state)
        if logits is None or not -logits.dim() <= dim < logits.dim() or dim % logits.dim() == logits.dim() - 1:
            return None
        return torch.softmax(logits, dim=dim)

    return fn


def _unnormalized(state: State, ctx: Context) -> torch.Tensor | None:
    """softmax of the unmasked scores, then the future zeroed, rows no longer summing to 1."""
    logits = _logits(state)
    if logits is None:
        return None
    keep = ~_hidden(ctx, logits.shape[-1])
    return torch.softmax(logits, dim=-1) * keep


def _renormalized_after(state: State, ctx: Context) -> torch.Tensor | None:
    """masked after the softmax and renormalised: the same weights as masking before it."""
    logits = _logits(state)
    return None if logits is None else torch.softmax(_fill(logits, _hidden(ctx, logits.shape[-1])), dim=-1)


def _softmax_over_entries(last: int | None) -> Callable[[State, Context], torch.Tensor | None]:
    """A softmax over every entry of the tensor at once (`last` None), or of each matrix (`last` 2):
    normalised over another set of entries than each row."""

    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        logits = _logits(state)
        if logits is None or logits.dim() < 2 or (last is not None and logits.dim() < last):
            return None
        flat = logits.flatten() if last is None else logits.flatten(-last)
        return torch.softmax(flat, dim=-1).view(logits.shape)

    return fn


SOFTMAX_DIMS = tuple(Alternative(f"dim={d}", "softmax-wrong-dim", _softmax_over(d)) for d in (-2, 0, 1, 2)) + (
    Alternative("over-each-matrix", "softmax-wrong-dim", _softmax_over_entries(2)),
    Alternative("over-all-entries", "softmax-wrong-dim", _softmax_over_entries(None)),
)
# no softmax at all: the context is built from the scores themselves
NO_SOFTMAX = Alternative("no-softmax", "uses-scores-not-weights", lambda s, c: _logits(s), skip=True)
# when no mask was applied before the softmax, masking after it is the alternatives' business
AFTER_SOFTMAX = (
    Alternative("masked-after-softmax", "", _renormalized_after),
    Alternative("masked-after-softmax-unnormalized", "mask-after-softmax-unnormalized", _unnormalized),
)
