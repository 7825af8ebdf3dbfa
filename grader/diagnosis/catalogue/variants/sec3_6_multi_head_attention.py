"""Buggy variants of sec3_6_multi_head_attention (book 3.6): the computation's generated stage by stage,
the mask's slicing, the dropout's place, the constructor's and the heads' registration written out."""

from __future__ import annotations

import torch
import torch.nn as nn

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.catalogue.variants.pipeline_variants import Wrong, staged, variants
from grader.diagnosis.walk.pipeline import Context
from solutions.sec3_5_causal_attention import CausalAttention
from solutions.sec3_6_multi_head_attention import MultiHeadAttention, MultiHeadAttentionWrapper

MODULE = "sec3_6_multi_head_attention"


ORDER = [
    "split_queries",
    "split_keys",
    "split_values",
    "scores",
    "masked",
    "scaled",
    "weights",
    "dropped",
    "context",
    "merged",
    "output",
]


def _build(wrong: Wrong) -> dict:
    """A MultiHeadAttention and a wrapper with one step done a wrong way."""

    class StagedMultiHeadAttention(MultiHeadAttention):
        mask: torch.Tensor  # the reference's buffer (torch types a module's attributes as Tensor | Module)

        def forward(self, x):
            t = x.shape[1]
            ctx = Context(
                hidden=self.mask.bool()[:t, :t],
                divisor=self.head_dim**0.5,
                heads=self.num_heads,
                head_dim=self.head_dim,
                out_proj=self.out_proj,
                dropout=self.dropout,
                sizes={"d_in": x.shape[-1], "d_out": self.d_out},
            )
            state = {"queries": self.W_query(x), "keys": self.W_key(x), "values": self.W_value(x)}
            return staged(ORDER, state, ctx, wrong)

    class StagedWrapper(MultiHeadAttentionWrapper):
        def forward(self, x):
            return staged(["concat"], {"heads": torch.stack([head(x) for head in self.heads])}, Context(), wrong)

    return {"MultiHeadAttention": StagedMultiHeadAttention, "MultiHeadAttentionWrapper": StagedWrapper}


def _mha(*, slice_mask=True, dropout="weights", honour_bias=True):
    """A MultiHeadAttention with its mask uncut, its dropout elsewhere, or qkv_bias ignored."""

    class BuggyMultiHeadAttention(MultiHeadAttention):
        mask: torch.Tensor  # the reference's buffer (torch types a module's attributes as Tensor | Module)

        def __init__(self, d_in, d_out, context_length, dropout_rate, num_heads, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout_rate, num_heads, qkv_bias and honour_bias)

        def forward(self, x):
            b, t, _ = x.shape
            h, hd = self.num_heads, self.head_dim
            q, k, v = (z.view(b, t, h, hd).transpose(1, 2) for z in (self.W_query(x), self.W_key(x), self.W_value(x)))
            mask = self.mask.bool()[:t, :t] if slice_mask else self.mask.bool()
            weights = torch.softmax((q @ k.transpose(2, 3)).masked_fill(mask, -torch.inf) / hd**0.5, dim=-1)
            if dropout == "weights":
                weights = self.dropout(weights)
            elif dropout == "always":  # F.dropout's training=True default: active in eval mode too
                weights = nn.functional.dropout(weights, self.dropout.p)
            context = self.out_proj((weights @ v).transpose(1, 2).contiguous().view(b, t, self.d_out))
            return self.dropout(context) if dropout == "output" else context

    return BuggyMultiHeadAttention


class _OutProjFirst(MultiHeadAttention):
    """The layers created in another order (out_proj first): only the seeded example changes."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        nn.Module.__init__(self)
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.out_proj = nn.Linear(d_out, d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))


class _PlainListWrapper(nn.Module):
    """Heads kept in a Python list: nn.Module does not see them."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


VARIANTS: list[Variant] = variants(MODULE, ORDER + ["concat"], _build) + [
    Variant("mask-not-sliced", {MODULE: {"MultiHeadAttention": _mha(slice_mask=False)}}),
    Variant("dropout-misplaced", {MODULE: {"MultiHeadAttention": _mha(dropout="always")}}),
    Variant("dropout-misplaced", {MODULE: {"MultiHeadAttention": _mha(dropout="output")}}),
    Variant("qkv-bias-ignored", {MODULE: {"MultiHeadAttention": _mha(honour_bias=False)}}),
    Variant("wrong-init", {MODULE: {"MultiHeadAttention": _OutProjFirst}}),
    Variant("heads-not-registered", {MODULE: {"MultiHeadAttentionWrapper": _PlainListWrapper}}),
]
