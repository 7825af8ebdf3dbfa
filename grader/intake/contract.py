"""The names the exercise API requires of each module (docs/exercise-api.md), as the intake
needs them: to recognise a module's code in a notebook without `# module:` lines, and to name a
near miss (`MultiHeadAttnetion`, `def forwad`, `qkv_bais=`).

Standard library only (the student bundle ships a copy of intake/). `tests/test_recognition.py`
checks these tables against the stubs in grader/exercises/ and grader/exercises/mindspore/.
"""

from __future__ import annotations

from grader.sections import SECTIONS

# module -> the top-level names its tests call, in the stub's order (grader/sections.py)
REQUIRED: dict[str, tuple[str, ...]] = {s.module: s.names for s in SECTIONS}

# the parameters of the contract's constructors and functions (a class: its __init__'s, without self)
PARAMETERS: dict[str, tuple[str, ...]] = {
    "SelfAttention_v1": ("d_in", "d_out"),
    "SelfAttention_v2": ("d_in", "d_out", "qkv_bias"),
    "CausalAttention": ("d_in", "d_out", "context_length", "dropout", "qkv_bias"),
    "MultiHeadAttentionWrapper": ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
    "MultiHeadAttention": ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
    "build_two_dim_wrapper": ("d_in", "context_length", "dropout"),
    "build_gpt2_small_attention": ("dropout",),
}

CLASSES = ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention")
# the methods a class of the contract defines itself: its constructor, and its forward pass
# (`forward` in PyTorch, `construct` in MindSpore: one of the two)
CONSTRUCTOR = "__init__"
FORWARD = ("forward", "construct")

OWNER: dict[str, str] = {name: module for module, names in REQUIRED.items() for name in names}
ALL_NAMES = frozenset(OWNER)
