"""Error patterns of sec3_5_causal_attention.

The CausalAttention probes use context_length = 7 (a size used for nothing else) with shorter
sequences of 1 to 5 tokens; the book's example has 6 tokens.
"""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

MODULE = "sec3_5_causal_attention"

PATTERNS: list[Pattern] = [
    # The whole (7, 7) mask against (T, T) scores: masked_fill_ gives "tensor a (5) ... tensor b (7)",
    # masked_fill and `+` give it the other way round.
    Pattern(
        "mask-not-sliced",
        MODULE,
        message_pattern(
            r"The size of tensor a \([1-5]\) must match the size of tensor b \(7\)"
            r"|The size of tensor a \(7\) must match the size of tensor b \([1-5]\)",
            "RuntimeError",
        ),
    ),
    # A mask cut to the book's 6 tokens ([:6, :6]) or a view to the book's batch of 2 x 6 tokens.
    Pattern(
        "hardcoded-shape",
        MODULE,
        message_pattern(
            r"The size of tensor a \([1-5]\) must match the size of tensor b \(6\) at non-singleton dimension [12]"
            r"|The size of tensor a \(6\) must match the size of tensor b \([1-5]\) at non-singleton dimension [12]"
            r"|shape '\[2, 6[,\]]",
            "RuntimeError",
        ),
    ),
    Pattern("qkv-bias-ignored", MODULE, message_pattern(r"unexpected keyword argument 'qkv_bias'", "TypeError")),
]
