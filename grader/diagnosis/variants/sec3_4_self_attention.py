"""Buggy variants of sec3_4_self_attention (book 3.4)."""
from __future__ import annotations

import torch
import torch.nn as nn

from grader.diagnosis.variants import Variant
from solutions.sec3_4_self_attention import SelfAttention_v1, SelfAttention_v2

MODULE = "sec3_4_self_attention"


# -- how the scores become weights: the right way is softmax(scores / sqrt(d_k), dim=-1) -------------
def _scaled(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    return scores / d_k**0.5


def _unscaled(scores, d_k):
    return scores


def _by_d_k(scores, d_k):
    return scores / d_k


def _by_sqrt_tokens(scores, d_k):
    return scores / scores.shape[-1] ** 0.5


def _family(scale=_scaled, dim=-1) -> dict:
    """scaled_attention_weights, SelfAttention_v1 and SelfAttention_v2 sharing one mistake."""

    def scaled_attention_weights(queries, keys):
        return torch.softmax(scale(queries @ keys.T, keys.shape[-1]), dim=dim)

    def attend(queries, keys, values):
        return scaled_attention_weights(queries, keys) @ values

    class V1(SelfAttention_v1):
        def forward(self, x):
            return attend(x @ self.W_query, x @ self.W_key, x @ self.W_value)

    class V2(SelfAttention_v2):
        def forward(self, x):
            return attend(self.W_query(x), self.W_key(x), self.W_value(x))

    return {"scaled_attention_weights": scaled_attention_weights, "SelfAttention_v1": V1, "SelfAttention_v2": V2}


# -- wrong-init: SelfAttention_v1's parameters created in another order or distribution -------------
class _V1KeyFirst(SelfAttention_v1):
    def __init__(self, d_in, d_out):
        nn.Module.__init__(self)
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))


class _V1Randn(SelfAttention_v1):
    def __init__(self, d_in, d_out):
        nn.Module.__init__(self)
        self.W_query = nn.Parameter(torch.randn(d_in, d_out))
        self.W_key = nn.Parameter(torch.randn(d_in, d_out))
        self.W_value = nn.Parameter(torch.randn(d_in, d_out))


# -- qkv-bias-ignored: the argument has no effect -----------------------------------------------------
class _V2NeverBias(SelfAttention_v2):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__(d_in, d_out, qkv_bias=False)


class _V2AlwaysBias(SelfAttention_v2):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__(d_in, d_out, qkv_bias=True)


VARIANTS: list[Variant] = [
    Variant("softmax-wrong-dim", {MODULE: _family(dim=0)}),
    Variant("missing-scaling", {MODULE: _family(scale=_unscaled)}),
    Variant("wrong-scaling", {MODULE: _family(scale=_by_d_k)}),
    Variant("wrong-scaling", {MODULE: _family(scale=_by_sqrt_tokens)}),
    Variant("wrong-init", {MODULE: {"SelfAttention_v1": _V1KeyFirst}}),
    Variant("wrong-init", {MODULE: {"SelfAttention_v1": _V1Randn}}),
    Variant("qkv-bias-ignored", {MODULE: {"SelfAttention_v2": _V2NeverBias}}),
    Variant("qkv-bias-ignored", {MODULE: {"SelfAttention_v2": _V2AlwaysBias}}),
]
