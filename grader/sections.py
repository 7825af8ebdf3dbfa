"""The sections of Chapter 3 the kit grades: the one manifest every list and per-module table of the
kit is derived from (records.MODULE_SECTIONS, probes.PROBE_MODULES, the notebook's book order, the
intake's contract, the diagnosis' tables, the student bundle's check lists).

Adding a section starts here. Standard library only, and nothing of the kit imported: the sandbox's
copy of the kit and the student bundle ship it as it is (the bundle as ch3_sections.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    module: str  # the student's file, without .py
    id: str  # the book's numbering, as every report shows it: "3.3" ... "ex3.3"
    names: tuple[str, ...]  # the top-level names its tests call, in the stub's order
    follows: str = ""  # an exercise: the module whose section it follows in the book
    causal: bool = False  # it computes causal attention (its first token attends to itself only)
    configures: str = ""  # an exercise whose whole task is to configure this module


MULTI_HEAD = "sec3_6_multi_head_attention"
SECTIONS: tuple[Section, ...] = (
    Section(
        "sec3_3_simple_attention",
        "3.3",
        (
            "attention_scores_for_query",
            "softmax_naive",
            "context_vector_for_query",
            "attention_scores",
            "attention_weights",
            "context_vectors",
        ),
    ),
    Section(
        "sec3_4_self_attention",
        "3.4",
        ("project_qkv", "scaled_attention_weights", "SelfAttention_v1", "SelfAttention_v2"),
    ),
    Section(
        "sec3_5_causal_attention",
        "3.5",
        ("simple_causal_mask", "mask_and_renormalize", "masked_attention_weights", "CausalAttention"),
        causal=True,
    ),
    Section(MULTI_HEAD, "3.6", ("MultiHeadAttentionWrapper", "MultiHeadAttention"), causal=True),
    Section("exercise3_1_weight_transfer", "ex3.1", ("transfer_weights",), follows="sec3_4_self_attention"),
    Section(
        "exercise3_2_two_dim_output",
        "ex3.2",
        ("build_two_dim_wrapper",),
        follows=MULTI_HEAD,
        causal=True,
        configures=MULTI_HEAD,
    ),
    Section(
        "exercise3_3_gpt2_attention",
        "ex3.3",
        ("build_gpt2_small_attention",),
        follows=MULTI_HEAD,
        causal=True,
        configures=MULTI_HEAD,
    ),
)

# grading order: the book's sections, then the exercises
MODULE_SECTIONS: dict[str, str] = {s.module: s.id for s in SECTIONS}
MODULES: tuple[str, ...] = tuple(MODULE_SECTIONS)
# book order (the notebook's, the self-check's): each exercise after the section it follows
BOOK_ORDER: tuple[str, ...] = tuple(
    module
    for s in SECTIONS
    if not s.follows
    for module in (s.module, *(e.module for e in SECTIONS if e.follows == s.module))
)
