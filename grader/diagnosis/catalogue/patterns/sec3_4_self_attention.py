"""Error patterns of sec3_4_self_attention."""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

MODULE = "sec3_4_self_attention"

PATTERNS: list[Pattern] = [
    # SelfAttention_v2(d_in, d_out, qkv_bias=True) when __init__ has no qkv_bias argument.
    Pattern("qkv-bias-ignored", MODULE, message_pattern(r"unexpected keyword argument 'qkv_bias'", "TypeError"))
]
