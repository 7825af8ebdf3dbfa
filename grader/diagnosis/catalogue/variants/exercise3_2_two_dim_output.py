"""Buggy variants of exercise3_2_two_dim_output (Exercise 3.2)."""

from __future__ import annotations

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.catalogue.variants.sec3_6_multi_head_attention import _build as _staged
from grader.diagnosis.walk.pipeline import STAGES
from solutions.sec3_6_multi_head_attention import MultiHeadAttentionWrapper

MODULE = "exercise3_2_two_dim_output"


def _build(d_out, num_heads, wrapper=MultiHeadAttentionWrapper):
    def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
        return wrapper(d_in, d_out, context_length, dropout, num_heads=num_heads)

    return build_two_dim_wrapper


VARIANTS: list[Variant] = [
    Variant("wrong-config", {MODULE: {"build_two_dim_wrapper": _build(2, 2)}}),  # the book's 4-d output
    Variant("wrong-config", {MODULE: {"build_two_dim_wrapper": _build(2, 1)}}),  # one head of size 2
    Variant("wrong-config", {MODULE: {"build_two_dim_wrapper": _build(1, 1)}}),  # one head of size 1
    # a correct exercise on top of a wrapper that concatenates along the tokens
    Variant(
        "concat-wrong-dim",
        {
            MODULE: {
                "build_two_dim_wrapper": _build(
                    1,
                    2,
                    _staged({"concat": next(a for a in STAGES["concat"].alternatives if a.key == "dim=1")})[
                        "MultiHeadAttentionWrapper"
                    ],
                )
            }
        },
    ),
]
