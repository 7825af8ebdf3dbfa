"""Buggy variants of exercise3_3_gpt2_attention (Exercise 3.3)."""

from __future__ import annotations

from grader.diagnosis.catalogue.variants import Variant
from solutions.sec3_6_multi_head_attention import MultiHeadAttention

MODULE = "exercise3_3_gpt2_attention"


def _build(d_in=768, d_out=768, context_length=1024, num_heads=12, qkv_bias=False):
    def build_gpt2_small_attention(dropout=0.0):
        return MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads=num_heads, qkv_bias=qkv_bias)

    return build_gpt2_small_attention


VARIANTS: list[Variant] = [
    Variant("wrong-config", {MODULE: {"build_gpt2_small_attention": _build(context_length=768)}}),
    Variant("wrong-config", {MODULE: {"build_gpt2_small_attention": _build(num_heads=8)}}),
    Variant("wrong-config", {MODULE: {"build_gpt2_small_attention": _build(qkv_bias=True)}}),
    Variant("wrong-config", {MODULE: {"build_gpt2_small_attention": _build(context_length=256)}}),
]
