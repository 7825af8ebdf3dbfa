"""Error patterns of exercise3_3_gpt2_attention."""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

MODULE = "exercise3_3_gpt2_attention"

PATTERNS: list[Pattern] = [
    # MultiHeadAttention refusing the configuration (e.g. 768 not divisible by the heads asked for)
    Pattern("wrong-config", MODULE, message_pattern(r"divisible|num_heads|d_out"))
]
