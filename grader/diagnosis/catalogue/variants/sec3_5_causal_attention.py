"""Buggy variants of sec3_5_causal_attention (book 3.5): the computation's generated stage by stage
(each makes one mistake consistently in every function and class it applies to; the diagnosis
compares per test, so a student who makes it in one place only is still recognised there); those
of the constructor, the mask's slicing and the dropout's place written out."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.catalogue.variants.pipeline_variants import Wrong, staged, variants
from grader.diagnosis.walk.pipeline import Context
from solutions.sec3_5_causal_attention import CausalAttention

MODULE = "sec3_5_causal_attention"


ORDER = ["scores", "masked", "scaled", "weights", "dropped", "context"]


def _build(wrong: Wrong) -> dict:
    """The three functions and a CausalAttention, sharing one wrong step."""

    def simple_causal_mask(num_tokens):
        return staged(["mask"], {"mask": torch.tril(torch.ones(num_tokens, num_tokens))}, Context(), wrong)

    def mask_and_renormalize(attn_weights):
        return staged(["masked_weights", "renormalized"], {"attention_weights": attn_weights}, Context(), wrong)

    def masked_attention_weights(attn_scores, d_k):
        return staged(["masked", "scaled", "weights"], {"scores": attn_scores}, Context(divisor=d_k**0.5), wrong)

    class Causal(CausalAttention):
        mask: torch.Tensor  # the reference's buffer (torch types a module's attributes as Tensor | Module)

        def forward(self, x):
            t = x.shape[1]
            keys = self.W_key(x)
            ctx = Context(
                hidden=self.mask.bool()[:t, :t],
                divisor=keys.shape[-1] ** 0.5,
                dropout=self.dropout,
                sizes={"d_in": x.shape[-1], "d_out": keys.shape[-1]},
            )
            return staged(ORDER, {"queries": self.W_query(x), "keys": keys, "values": self.W_value(x)}, ctx, wrong)

    return {
        "simple_causal_mask": simple_causal_mask,
        "mask_and_renormalize": mask_and_renormalize,
        "masked_attention_weights": masked_attention_weights,
        "CausalAttention": Causal,
    }


# -- CausalAttention only: mask slicing, dropout placement, initialisation, bias -----------------------
class _Causal(CausalAttention):
    """The book's forward, in steps that the variants below change one at a time."""

    mask: torch.Tensor  # the reference's buffer (torch types a module's attributes as Tensor | Module)

    def project(self, x):
        return self.W_query(x), self.W_key(x), self.W_value(x)

    def cut_mask(self, num_tokens):
        return self.mask.bool()[:num_tokens, :num_tokens]

    def drop_scores(self, scores):
        return scores

    def drop_weights(self, weights):
        return self.dropout(weights)

    def drop_output(self, context):
        return context

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries, keys, values = self.project(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.cut_mask(num_tokens), -torch.inf)
        attn_scores = self.drop_scores(attn_scores)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.drop_weights(attn_weights)
        return self.drop_output(attn_weights @ values)


class _NotSliced(_Causal):
    def cut_mask(self, num_tokens):
        return self.mask.bool()  # (context_length, context_length) whatever the length


class _SlicedToBook(_Causal):
    def cut_mask(self, num_tokens):
        return self.mask.bool()[:6, :6]  # the book's six tokens


class _ReshapedToBook(_Causal):
    def drop_output(self, context):
        return context.reshape(2, 6, -1)  # the book's batch of 2 x 6 tokens


class _DropoutOnScores(_Causal):
    def drop_scores(self, scores):
        return self.dropout(scores)

    def drop_weights(self, weights):
        return weights


class _DropoutOnOutput(_Causal):
    def drop_weights(self, weights):
        return weights

    def drop_output(self, context):
        return self.dropout(context)


class _DropoutAlwaysOn(_Causal):
    def drop_weights(self, weights):
        return F.dropout(weights, self.dropout.p)  # training=True by default, even in eval mode


class _KeyFirst(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        nn.Module.__init__(self)
        self.d_out = d_out
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))


class _NeverBias(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias=False)


VARIANTS: list[Variant] = variants(MODULE, ["mask", "masked_weights", "renormalized"] + ORDER, _build) + [
    Variant("mask-not-sliced", {MODULE: {"CausalAttention": _NotSliced}}),
    Variant("hardcoded-shape", {MODULE: {"CausalAttention": _SlicedToBook}}),
    Variant("hardcoded-shape", {MODULE: {"CausalAttention": _ReshapedToBook}}),
    Variant("dropout-misplaced", {MODULE: {"CausalAttention": _DropoutOnScores}}),
    Variant("dropout-misplaced", {MODULE: {"CausalAttention": _DropoutOnOutput}}),
    Variant("dropout-misplaced", {MODULE: {"CausalAttention": _DropoutAlwaysOn}}),
    Variant("wrong-init", {MODULE: {"CausalAttention": _KeyFirst}}),
    Variant("qkv-bias-ignored", {MODULE: {"CausalAttention": _NeverBias}}),
]
