"""Mutants of the MindSpore reference, each making one known mistake, graded as a class: the
diagnosis (patterns and the PyTorch variants, seen through the MindSpore adapter) must name the
mistake on the tests that fail, and nothing else."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("mindspore")

from grader.run import grade
from tests.conftest import ROOT

S33, S34, S35, S36 = (
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
)
# (name, module, old text, new text, expected misconception)
MUTANTS = [
    (
        "softmax-axis0",
        S33,
        "ops.softmax(attention_scores(inputs), axis=-1)",
        "ops.softmax(attention_scores(inputs), axis=0)",
        "softmax-wrong-dim",
    ),
    (
        "dim-keyword",
        S33,
        "ops.softmax(attention_scores(inputs), axis=-1)",
        "ops.softmax(attention_scores(inputs), dim=-1)",
        "dim-not-axis",
    ),
    (
        "unscaled",
        S34,
        "ops.softmax(attn_scores / d_k**0.5, axis=-1)",
        "ops.softmax(attn_scores, axis=-1)",
        "missing-scaling",
    ),
    ("bias-ignored", S34, "has_bias=qkv_bias", "has_bias=False", "qkv-bias-ignored"),
    # The first token's row is all -inf, and MindSpore 2.10's CPU softmax then returns zeros (and
    # corrupts other rows of the same matrix) where PyTorch returns NaN: the outputs match no PyTorch
    # variant, but the behaviour signature of a mask that hides the token itself names it.
    (
        "mask-diagonal",
        S35,
        '"mask", ops.triu(ops.ones((context_length, context_length)), diagonal=1)',
        '"mask", ops.triu(ops.ones((context_length, context_length)), diagonal=0)',
        "mask-includes-diagonal",
    ),
    ("positional-dropout", S35, "nn.Dropout(p=dropout)", "nn.Dropout(dropout)", "dropout-keep-prob"),
    (
        "trainable-mask",
        S35,
        'self.register_buffer(\n            "mask", ops.triu(ops.ones((context_length, context_length)), diagonal=1)'
        "\n        )",
        "self.mask = Parameter(ops.triu(ops.ones((context_length, context_length)), diagonal=1))",
        "mask-trainable",
    ),
    ("mask-unsliced", S35, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()", "mask-not-sliced"),
    ("mask-unsliced-mha", S36, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()", "mask-not-sliced"),
    ("mask-cut-to-6", S35, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()[:6, :6]", "hardcoded-shape"),
    (
        "reshape-to-book",
        S36,
        "keys = keys.reshape(b, num_tokens, self.num_heads, self.head_dim)",
        "keys = keys.reshape(2, 6, self.num_heads, self.head_dim)",
        "hardcoded-shape",
    ),
    (
        "merge-no-swap",
        S36,
        "context_vec = (attn_weights @ values).swapaxes(1, 2)",
        "context_vec = attn_weights @ values",
        "heads-merged-wrong",
    ),
    ("no-out-proj", S36, "context_vec = self.out_proj(context_vec)  # (b, T, d_out)", "", "out-proj-missing"),
    ("plain-list-heads", S36, "self.heads = nn.CellList(", "self.heads = list(", "heads-not-registered"),
    (
        "concat-tokens",
        S36,
        "ops.cat([head(x) for head in self.heads], axis=-1)",
        "ops.cat([head(x) for head in self.heads], axis=1)",
        "concat-wrong-dim",
    ),
    ("untransposed", "exercise3_1_weight_transfer", ".weight.T", ".weight", "weights-not-transposed"),
    (
        "eval-on-cell",
        "exercise3_3_gpt2_attention",
        "return MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)",
        "m = MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)\n    m.eval()\n    return m",
        "torch-api",
    ),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("mutants")
    for name, module, old, new, _ in MUTANTS:
        target = base / "class" / name
        target.mkdir(parents=True)
        for path in (ROOT / "solutions" / "mindspore").glob("*.py"):
            if path.name == "__init__.py":
                continue
            source = re.sub(r"^from \.(\w+) import", r"from \1 import", path.read_text(), flags=re.M)
            if path.stem == module:
                assert old in source, (name, old)
                source = source.replace(old, new)
                if "Parameter(" in new and "import Parameter" not in source:
                    source = source.replace("from mindspore import nn, ops", "from mindspore import Parameter, nn, ops")
            (target / path.name).write_text(source)
    summary = grade(base / "class", base / "reports", force=True)
    return {r.submission: r for r in summary.results}


@pytest.mark.parametrize("name, expected", [(m[0], m[4]) for m in MUTANTS])
def test_each_mutant_is_diagnosed_as_its_mistake(graded, name, expected):
    result = graded[name]
    failing = [t for t in result.tests if t.status != "passed"]
    assert failing, f"{name}: no test fails"
    named = {t.misconception for t in failing if t.misconception}
    assert named == ({expected} if expected else set()), {
        t.id: (t.status, t.misconception, t.blocked_by) for t in failing
    }
