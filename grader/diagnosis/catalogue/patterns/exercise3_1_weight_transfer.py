"""Error patterns of exercise3_1_weight_transfer."""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

MODULE = "exercise3_1_weight_transfer"

PATTERNS: list[Pattern] = [
    # An untransposed nn.Linear weight (d_out, d_in) used as x @ W: "(6x3 and 2x3)"; copied with
    # copy_ into a (d_in, d_out) matrix: "The size of tensor a (2) must match the size of tensor b (3)";
    # assigned by slicing (W[:] = weight, W.data[:] = weight): "The expanded size of the tensor (2)
    # must match the existing size (3)".
    Pattern(
        "weights-not-transposed",
        MODULE,
        message_pattern(
            r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size"
            r"|must match the existing size",
            "RuntimeError",
        ),
    )
]
