"""The stages' ways of computing, right and wrong (the table that assembles them is
`grader.diagnosis.pipeline`): each takes a `state` (checkpoint name -> tensor, in the reference's
layout) and a `Context`, and returns the checkpoint's value, or None when it does not apply."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from grader.diagnosis.masks import MASKS, mask_misconception, triangle  # noqa: F401 - part of this table

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
    kind: str  # how its value may be laid out (see grader.diagnosis.layout)
    right: Callable[[State, Context], torch.Tensor | None]
    alternatives: tuple[Alternative, ...] = ()
    rank: int = 0  # pipeline order; stages of one rank (queries, keys, values) come in any order
    needs: tuple[str, ...] = ()  # the checkpoints it may be computed from


# -- masks: which (query, key) pairs are hidden (grader.diagnosis.masks) ---------------------------


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
)


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


SOFTMAX_DIMS = tuple(Alternative(f"dim={d}", "softmax-wrong-dim", _softmax_over(d)) for d in (-2, 0, 1, 2))
# no softmax at all: the context is built from the scores themselves
NO_SOFTMAX = Alternative("no-softmax", "uses-scores-not-weights", lambda s, c: _logits(s), skip=True)
# when no mask was applied before the softmax, masking after it is the alternatives' business
AFTER_SOFTMAX = (
    Alternative("masked-after-softmax", "", _renormalized_after),
    Alternative("masked-after-softmax-unnormalized", "mask-after-softmax-unnormalized", _unnormalized),
)


# -- context and heads ---------------------------------------------------------------------------------
def scores_right(state: State, ctx: Context) -> torch.Tensor | None:
    queries = state.get("split_queries", state.get("queries"))
    keys = state.get("split_keys", state.get("keys"))
    if queries is None or keys is None or queries.dim() < 2 or keys.dim() < 2:
        return None
    return queries @ keys.transpose(-2, -1)


def _scores_swapped(state: State, ctx: Context) -> torch.Tensor | None:
    """keys @ queries.T: queries and keys change roles (the scores come out transposed)."""
    scores = scores_right(state, ctx)
    return None if scores is None else scores.transpose(-2, -1)


def _values(state: State) -> torch.Tensor | None:
    return state.get("split_values", state.get("values"))


def _weights(state: State) -> torch.Tensor | None:
    return state.get("dropped", state.get("weights"))


def context_right(state: State, ctx: Context) -> torch.Tensor | None:
    weights, values = _weights(state), _values(state)
    return None if weights is None or values is None else weights @ values


def _context_from(name: str) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        matrix, values = state.get(name), _values(state)
        if matrix is None or values is None or torch.isinf(matrix).any():
            return None
        return matrix @ values

    return fn


def _split(name: str, straight: bool = False) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        x = state.get(name)
        if x is None or x.dim() != 3 or ctx.heads < 1 or x.shape[-1] != ctx.heads * ctx.head_dim:
            return None
        b, t, _ = x.shape
        if straight:  # (b, T, d_out) viewed as (b, heads, T, head_dim): tokens and heads mixed up
            return x.reshape(b, ctx.heads, t, ctx.head_dim)
        return x.reshape(b, t, ctx.heads, ctx.head_dim).transpose(1, 2)

    return fn


def _merge(straight: bool = False) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        context = state.get("context")
        if context is None or context.dim() != 4:
            return None
        b, h, t, d = context.shape
        if straight:  # viewed back without moving the heads next to head_dim
            return context.reshape(b, t, h * d)
        return context.transpose(1, 2).reshape(b, t, h * d)

    return fn


def output_right(state: State, ctx: Context) -> torch.Tensor | None:
    merged = state.get("merged")
    return None if merged is None or ctx.out_proj is None else ctx.out_proj(merged)


def _no_out_proj(state: State, ctx: Context) -> torch.Tensor | None:
    return state.get("merged")


# -- section 3.5's functions: the simple mask and the mask applied after the softmax -------------------
def _keep(hide: Callable[[int], torch.Tensor]) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        mask = state.get("mask")
        return None if mask is None else (~hide(mask.shape[-1])).to(mask.dtype)

    return fn


def _masked_weights(hide: Callable[[int], torch.Tensor] | None) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        weights = state.get("attention_weights")
        if weights is None:
            return None
        hidden = _hidden(ctx, weights.shape[-1]) if hide is None else hide(weights.shape[-1])
        return weights * ~hidden

    return fn


def renormalized_right(state: State, ctx: Context) -> torch.Tensor | None:
    masked = state.get("masked_weights")
    return None if masked is None else masked / masked.sum(dim=-1, keepdim=True)


def _not_renormalized(state: State, ctx: Context) -> torch.Tensor | None:
    return state.get("masked_weights")


def _wrong_alternatives(make: Callable[[Callable[[int], torch.Tensor]], Callable]) -> tuple[Alternative, ...]:
    return tuple(Alternative(key, mid, make(hide), skip=(key == "hides-nothing")) for key, (mid, hide) in MASKS.items())


# -- Exercise 3.1: the copied matrices -------------------------------------------------------------------
COPIES = ("copied_query", "copied_key", "copied_value")


def _copy_alternatives(name: str) -> tuple[Alternative, ...]:
    alternatives = [Alternative("untransposed", "weights-not-transposed", _untransposed(name))]
    for other in COPIES:
        if other != name:
            alternatives.append(Alternative(f"from-{other}", "weights-swapped", _copied(other)))
    return tuple(alternatives)


def _untransposed(name: str) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        return state[name].T if name in state and state[name].dim() == 2 else None

    return fn


def _copied(other: str) -> Callable[[State, Context], torch.Tensor | None]:
    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        return state.get(other)

    return fn


def _concatenated(dim: int) -> Callable[[State, Context], torch.Tensor | None]:
    """The heads' outputs (stacked along a new first dimension in `state["heads"]`) joined along `dim`."""

    def fn(state: State, ctx: Context) -> torch.Tensor | None:
        heads = state.get("heads")
        if (
            heads is None
            or heads.dim() < 2
            or not -(heads.dim() - 1) <= dim < heads.dim() - 1
            or dim % (heads.dim() - 1) == heads.dim() - 2
        ):
            return None
        return torch.cat(list(heads.unbind(0)), dim=dim)

    return fn


def _joined(state: State, ctx: Context) -> torch.Tensor | None:
    """The wrapper's right way: the heads' outputs side by side along the last dimension."""
    heads = state.get("heads")
    return None if heads is None else torch.cat(list(heads.unbind(0)), dim=-1)


def _given(name: str) -> Callable[[State, Context], torch.Tensor | None]:
    """A stage whose right value is the reference's own (its inputs are not known to the recogniser)."""
    return lambda state, ctx: None
