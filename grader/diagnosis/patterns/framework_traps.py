"""Error patterns of the MindSpore track: PyTorch habits that MindSpore answers with an exception.

Exact messages of MindSpore 2.10 (CPU):
- `nn.Dropout(0.0)`: positional is keep_prob; "For 'Dropout', the 'keep_prob' must be a number in
  range (0, 1], but got 0.0." (a positional 0.1 keeps 10 % and scales them by 10);
- `ops.softmax(x, dim=-1)`: "softmax() got an unexpected keyword argument 'dim'";
- `cell.eval()`/`cell.train()`: "'X' object has no attribute 'eval'"; a Cell with `forward` instead of
  `construct`: "For 'Cell', the method 'construct' is not defined.";
- `set_context(device_target="Ascend")` on a CPU-only build: "Unsupported device target Ascend".
  (The grader keeps that call from taking effect; the pattern catches other ways of asking.)
"""
from __future__ import annotations

from grader.diagnosis.patterns import Pattern, message_pattern

PATTERNS: list[Pattern] = [
    Pattern("dropout-keep-prob", "", message_pattern(r"'keep_prob' must be", "ValueError")),
    Pattern("dim-not-axis", "", message_pattern(r"unexpected keyword argument 'dim'", "TypeError")),
    Pattern("torch-api", "", message_pattern(
        r"object has no attribute '(eval|train|forward|parameters|named_parameters|masked_fill_)'"
        r"|the method 'construct' is not defined", "AttributeError")),
    Pattern("device-target", "", message_pattern(r"Unsupported device target", "RuntimeError")),
]
