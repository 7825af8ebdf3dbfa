"""The stages' ways of computing that follow the attention weights: the scores, the context and the
heads, section 3.5's functions (the simple mask, the mask applied after the softmax), Exercise 3.1's
copied matrices and the wrapper's concatenation (the stages up to the weights: `stages_to_weights`)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from grader.diagnosis.walk.masks import MASKS
from grader.diagnosis.walk.stages_to_weights import Alternative, Context, State, _hidden


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
