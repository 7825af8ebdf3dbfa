"""Error patterns of sec3_6_multi_head_attention."""
from __future__ import annotations

from grader.diagnosis.patterns import Pattern, message_pattern

MODULE = "sec3_6_multi_head_attention"

PATTERNS: list[Pattern] = [
    # The whole (context_length, context_length) mask against (b, heads, T, T) scores with T < context_length
    Pattern("mask-not-sliced", MODULE, message_pattern(
        r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension [23]"
        r"|expanded size of the tensor \(\d+\) must match the existing size \(\d+\) at non-singleton dimension [23]",
        "RuntimeError")),
    # view/reshape to sizes fixed for the book's example (batch 2, 6 tokens) on other inputs
    Pattern("hardcoded-shape", MODULE, message_pattern(r"shape '\[[-\d, ]+\]' is invalid for input of size \d+",
                                                        "RuntimeError")),
]
