"""Buggy variants of sec3_4_self_attention (book 3.4): the computation's variants generated stage by
stage; the constructors' (wrong-init, qkv-bias-ignored) written out."""

from __future__ import annotations

import torch
import torch.nn as nn

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.catalogue.variants.pipeline_variants import Wrong, staged, variants
from grader.diagnosis.walk.pipeline import Context
from solutions.sec3_4_self_attention import SelfAttention_v1, SelfAttention_v2

MODULE = "sec3_4_self_attention"
ORDER = ["scores", "scaled", "weights", "context"]


def _attend(queries, keys, values, wrong: Wrong, order=ORDER):
    ctx = Context(divisor=keys.shape[-1] ** 0.5, sizes={"d_out": keys.shape[-1]})
    state = {"queries": queries, "keys": keys}
    if values is not None:
        state["values"] = values
    return staged(order, state, ctx, wrong)


def _build(wrong: Wrong) -> dict:
    def scaled_attention_weights(queries, keys):
        return _attend(queries, keys, None, wrong, ORDER[:-1])

    class V1(SelfAttention_v1):
        def forward(self, x):
            return _attend(x @ self.W_query, x @ self.W_key, x @ self.W_value, wrong)

    class V2(SelfAttention_v2):
        def forward(self, x):
            return _attend(self.W_query(x), self.W_key(x), self.W_value(x), wrong)

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


VARIANTS: list[Variant] = variants(MODULE, ORDER, _build) + [
    Variant("wrong-init", {MODULE: {"SelfAttention_v1": _V1KeyFirst}}),
    Variant("wrong-init", {MODULE: {"SelfAttention_v1": _V1Randn}}),
    Variant("qkv-bias-ignored", {MODULE: {"SelfAttention_v2": _V2NeverBias}}),
    Variant("qkv-bias-ignored", {MODULE: {"SelfAttention_v2": _V2AlwaysBias}}),
]
