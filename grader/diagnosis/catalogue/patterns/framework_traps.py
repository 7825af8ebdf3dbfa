"""Error patterns of the MindSpore track: PyTorch habits that MindSpore answers with an exception.

Exact messages of MindSpore 2.10 (CPU):
- `nn.Dropout(0.0)`: positional is keep_prob; "For 'Dropout', the 'keep_prob' must be a number in
  range (0, 1], but got 0.0." (a positional 0.1 keeps 10 % and scales them by 10);
- `ops.softmax(x, dim=-1)`: "softmax() got an unexpected keyword argument 'dim'";
- `cell.eval()`/`cell.train()`: "'X' object has no attribute 'eval'"; a Cell with `forward` instead of
  `construct`: "For 'Cell', the method 'construct' is not defined.";
(A `set_context(device_target="Ascend")`, which raises "Unsupported device target Ascend" on a
CPU-only build, is kept from taking effect by the adapter: it costs no points and needs no pattern.)
- a mask not cut to the sequence length, or cut to the book's 6 tokens: "For 'MaskedFill', input.shape
  and mask.shape need to broadcast. ... but got input.shape = [3, 5, 5] and mask.shape = [7, 7]"
  (the CausalAttention probes use context_length 7, MultiHeadAttention's 8; never 6);
- a reshape to the book's batch of 2 x 6 tokens: "proposed_shape '[const vector]{2, 6, 2, 4}' is invalid".
"""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern, message_pattern

PATTERNS: list[Pattern] = [
    Pattern("dropout-keep-prob", "", message_pattern(r"'keep_prob' must be", "ValueError")),
    Pattern("dim-not-axis", "", message_pattern(r"unexpected keyword argument 'dim'", "TypeError")),
    Pattern(
        "torch-api",
        "",
        message_pattern(
            r"object has no attribute '(eval|train|forward|parameters|named_parameters|masked_fill_)'"
            r"|the method 'construct' is not defined",
            "AttributeError",
        ),
    ),
    Pattern(
        "hardcoded-shape",
        "",
        message_pattern(
            r"'MaskedFill', input.shape and mask.shape need to broadcast.*mask.shape = \[(1, )*6, 6\]"
            r"|proposed_shape '\[const vector\]\{2, 6[,}]",
            "ValueError",
        ),
    ),
    Pattern(
        "mask-not-sliced",
        "",
        message_pattern(r"'MaskedFill', input.shape and mask.shape need to broadcast", "ValueError"),
    ),
]
