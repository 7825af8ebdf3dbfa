"""Buggy variants of sec3_6_multi_head_attention (book 3.6): each reproduces one misconception."""
from __future__ import annotations

import torch
import torch.nn as nn

from grader.diagnosis.variants import Variant
from solutions.sec3_5_causal_attention import CausalAttention
from solutions.sec3_6_multi_head_attention import MultiHeadAttention, MultiHeadAttentionWrapper

MODULE = "sec3_6_multi_head_attention"


def _mha(*, split="view-transpose", merge="transpose-view", out_proj=True, scale="head_dim",
         slice_mask=True, dropout="weights", honour_bias=True):
    """A MultiHeadAttention class with one step done the wrong way."""

    class BuggyMultiHeadAttention(MultiHeadAttention):
        def __init__(self, d_in, d_out, context_length, dropout_rate, num_heads, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout_rate, num_heads, qkv_bias and honour_bias)

        def forward(self, x):
            b, t, _ = x.shape
            h, hd = self.num_heads, self.head_dim
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            if split == "view-transpose":
                q, k, v = (z.view(b, t, h, hd).transpose(1, 2) for z in (q, k, v))
            else:  # straight to (b, heads, T, head_dim): rows of different tokens end up mixed
                q, k, v = (z.view(b, h, t, hd) for z in (q, k, v))
            scores = q @ k.transpose(2, 3)
            mask = self.mask.bool()[:t, :t] if slice_mask else self.mask.bool()
            scores = scores.masked_fill(mask, -torch.inf)
            divisor = {"head_dim": hd ** 0.5, "none": 1.0, "d_out": self.d_out ** 0.5}[scale]
            weights = torch.softmax(scores / divisor, dim=-1)
            if dropout == "weights":
                weights = self.dropout(weights)
            elif dropout == "always":  # F.dropout's training=True default: active in eval mode too
                weights = nn.functional.dropout(weights, self.dropout.p)
            context = weights @ v  # (b, h, T, hd)
            if merge == "transpose-view":
                context = context.transpose(1, 2).contiguous().view(b, t, self.d_out)
            else:  # merged without transposing back to (b, T, heads, head_dim)
                context = context.contiguous().view(b, t, self.d_out)
            if out_proj:
                context = self.out_proj(context)
            if dropout == "output":
                context = self.dropout(context)
            return context

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


def _cat_wrapper(dim):
    class CatWrapper(MultiHeadAttentionWrapper):
        def forward(self, x):
            return torch.cat([head(x) for head in self.heads], dim=dim)

    return CatWrapper


VARIANTS: list[Variant] = [
    Variant("heads-split-wrong", {MODULE: {"MultiHeadAttention": _mha(split="view")}}),
    Variant("heads-merged-wrong", {MODULE: {"MultiHeadAttention": _mha(merge="view")}}),
    Variant("out-proj-missing", {MODULE: {"MultiHeadAttention": _mha(out_proj=False)}}),
    Variant("missing-scaling", {MODULE: {"MultiHeadAttention": _mha(scale="none")}}),
    Variant("wrong-scaling", {MODULE: {"MultiHeadAttention": _mha(scale="d_out")}}),
    Variant("mask-not-sliced", {MODULE: {"MultiHeadAttention": _mha(slice_mask=False)}}),
    Variant("dropout-misplaced", {MODULE: {"MultiHeadAttention": _mha(dropout="always")}}),
    Variant("dropout-misplaced", {MODULE: {"MultiHeadAttention": _mha(dropout="output")}}),
    Variant("qkv-bias-ignored", {MODULE: {"MultiHeadAttention": _mha(honour_bias=False)}}),
    Variant("wrong-init", {MODULE: {"MultiHeadAttention": _OutProjFirst}}),
    Variant("heads-not-registered", {MODULE: {"MultiHeadAttentionWrapper": _PlainListWrapper}}),
    Variant("concat-wrong-dim", {MODULE: {"MultiHeadAttentionWrapper": _cat_wrapper(1)}}),
    Variant("concat-wrong-dim", {MODULE: {"MultiHeadAttentionWrapper": _cat_wrapper(0)}}),
]
