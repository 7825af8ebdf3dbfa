"""Error patterns of exercise3_1_weight_transfer."""
from __future__ import annotations

from grader.diagnosis.patterns import Pattern, message_pattern

MODULE = "exercise3_1_weight_transfer"

PATTERNS: list[Pattern] = [
    # An untransposed nn.Linear weight (d_out, d_in) used as x @ W: "(6x3 and 2x3)"
    Pattern("weights-not-transposed", MODULE,
            message_pattern(r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size", "RuntimeError")),
]
