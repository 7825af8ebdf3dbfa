"""Error patterns of sec3_6_multi_head_attention."""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

MODULE = "sec3_6_multi_head_attention"

PATTERNS: list[Pattern] = [
    # The whole (context_length, context_length) mask against (b, heads, T, T) scores with T < context_length:
    # every MHA probe with T < context_length uses context_length 8 (and T of 5 or 6)
    Pattern(
        "mask-not-sliced",
        MODULE,
        message_pattern(
            r"size of tensor a \([1-7]\) must match the size of tensor b \(8\) at non-singleton dimension [23]"
            r"|size of tensor a \(8\) must match the size of tensor b \([1-7]\) at non-singleton dimension [23]"
            r"|expanded size of the tensor \([1-7]\) must match the existing size \(8\)"
            r" at non-singleton dimension [23]",
            "RuntimeError",
        ),
    ),
    # a mask cut to the book's 6 tokens against a probe's 5
    Pattern(
        "hardcoded-shape",
        MODULE,
        message_pattern(
            r"size of tensor a \(5\) must match the size of tensor b \(6\) at non-singleton dimension [23]"
            r"|size of tensor a \(6\) must match the size of tensor b \(5\) at non-singleton dimension [23]"
            r"|expanded size of the tensor \(5\) must match the existing size \(6\) at non-singleton dimension [23]",
            "RuntimeError",
        ),
    ),
    # view/reshape to sizes fixed for the book's example (batch 2, 6 tokens) on other inputs
    Pattern(
        "hardcoded-shape",
        MODULE,
        message_pattern(r"shape '\[[-\d, ]+\]' is invalid for input of size \d+", "RuntimeError"),
    ),
]
