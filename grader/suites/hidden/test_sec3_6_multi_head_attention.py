"""Hidden suite for sec3_6_multi_head_attention (book 3.6.1-3.6.2): the stacked-heads wrapper and
multi-head attention with weight splits."""

import pytest
import torch

from grader.suites.compare import (
    expect,
    expect_cases,
    expect_close,
    expect_consistent,
    expect_depends,
    expect_equal,
    expect_shape,
    expect_varies,
    follows_own_non_causal,
    judged_against,
    same_values,
    side_by_side,
)

P = "sec3_6_multi_head_attention:"


def _causal(got, want, key, what):
    """Outputs before position `keep` must not change when later tokens change; outputs after the
    first token must change when it does (a module whose outputs ignore the input, or see only
    their own token, is causal for nothing)."""
    keep = want["keep"]
    expect_shape(got["out"], want["out"].shape, what=what, on="on.mha_causal")
    expect_shape(got["changed"], want["changed"].shape, what=what, on="on.mha_causal")
    expect_varies(got["out"], what=what, on="on.mha_causal")
    # NaN is not "changed": a fully masked row gives NaN whatever the later tokens are
    broken = (~torch.isfinite(got["out"]) | ~torch.isfinite(got["changed"])).any(dim=0).any(dim=-1)
    expect(not bool(broken.any()), "check.mha-nonfinite", positions=[i for i, b in enumerate(broken.tolist()) if b])
    earlier_same = torch.allclose(got["out"][:, :keep], got["changed"][:, :keep], atol=1e-5, rtol=1e-4)
    differs = (got["out"][:, :keep] - got["changed"][:, :keep]).abs().amax(dim=(0, 2))
    expect(earlier_same, key, keep=keep, positions=[i for i, d in enumerate(differs.tolist()) if not d <= 1e-5])
    expect_shape(got["earlier"], want["earlier"].shape, what=what, on="on.mha_first_token_changed")
    expect_depends(
        got["earlier"][:, 1:],
        got["out"][:, 1:],
        what=what,
        on="on.mha_first_token_changed",
        key="mismatch.later-ignore-earlier",
    )


# -- 3.6.1 MultiHeadAttentionWrapper -----------------------------------------------------------


@pytest.mark.points(1)
def test_wrapper_registers_heads(student, reference):
    got, want = student.run(P + "wrapper_parameters"), reference.run(P + "wrapper_parameters")
    expect_equal(got["num_heads"], want["num_heads"], what="what.mha_num_heads", on="on.mha_wrapper_params")
    wrapper, heads = got["wrapper_parameters"], got["head_parameters"]
    # fewer numbers than its heads hold: some heads are not sub-modules; more: parameters of its own
    expect(heads > 0 and wrapper >= heads, "check.mha-heads-registered", wrapper=wrapper, heads=heads)
    expect(wrapper == heads, "check.mha-wrapper-own-parameters", wrapper=wrapper, heads=heads, extra=wrapper - heads)


@pytest.mark.uses(
    "sec3_5_causal_attention::test_causal_attention_matches_reference", "sec3_5_causal_attention::test_causality"
)
@pytest.mark.points(1)
def test_wrapper_concatenates_heads(student, reference):
    got = student.run(P + "wrapper_heads")
    reference.run(P + "wrapper_heads")
    expect_varies(got["out"], what="what.mha_wrapper_output", on="on.mha_wrapper_main")
    side_by_side = torch.cat(got["heads"], dim=-1)  # the wrapper's own heads, next to each other
    if same_values(got["out"], side_by_side):
        return  # NaN where its heads give NaN too: the heads' CausalAttention is charged in 3.5
    expect_consistent(
        got["out"],
        side_by_side,
        what="what.mha_wrapper_vs_heads",
        on="on.mha_wrapper_main",
        baseline_what="what.mha_wrapper_heads",
        baseline_on="on.mha_wrapper_main",
    )


def _own_heads(student, key):
    """The student's own CausalAttention (3.5) for each head of wrapper case `key`, side by side
    (None when it cannot be run: the wrapper is then judged against the reference only)."""
    own = student.outputs(P + "wrapper_own_heads")
    return own.get(key) if isinstance(own, dict) else None


# The wrapper is judged against what the student's own CausalAttention gives, side by side, when that
# differs from the reference's: a mistake of 3.5 costs 3.5's points only (docs/grading-policy.md).
@pytest.mark.uses(
    "sec3_5_causal_attention::test_causal_attention_matches_reference",
    "sec3_5_causal_attention::test_causality",
    own=True,
)
@pytest.mark.points(2)
def test_wrapper_matches_reference(student, reference):
    got, want = student.run(P + "wrapper_forward"), reference.run(P + "wrapper_forward")
    cases = []
    for key, on in (("main", "on.mha_wrapper_main"), ("square", "on.mha_wrapper_square")):
        expected = judged_against(got[key], want[key], side_by_side(_own_heads(student, key)))
        if expected is want[key]:
            cases.append((got[key], expected, "what.mha_wrapper_output", on))
        elif expected is not None:  # None: exactly the student's own heads side by side
            cases.append((got[key], expected, "what.mha_wrapper_vs_own_heads", on))
    expect_cases(cases)


@pytest.mark.uses(
    "sec3_5_causal_attention::test_causal_attention_matches_reference",
    "sec3_5_causal_attention::test_causality",
    own=True,
)
@pytest.mark.points(1)
def test_wrapper_causal(student, reference):
    got = student.run(P + "wrapper_causal")
    own = _own_heads(student, "causal")
    own = own if isinstance(own, dict) else {}
    if follows_own_non_causal(got, side_by_side(own.get("out")), side_by_side(own.get("changed")), got["keep"]):
        return  # as causal as the student's own heads: their CausalAttention is charged in 3.5
    _causal(got, reference.run(P + "wrapper_causal"), "check.mha-wrapper-causal", "what.mha_wrapper_output")


# -- 3.6.2 MultiHeadAttention ------------------------------------------------------------------


@pytest.mark.points(1)
def test_mha_configuration(student, reference):
    got, want = student.run(P + "mha_configuration"), reference.run(P + "mha_configuration")
    for name in ("d_out", "num_heads", "head_dim"):
        expect_equal(got[name], want[name], what=f"what.mha_attr_{name}", on="on.mha_config")
    expect(got["raised"], "check.mha-rejects-indivisible")


@pytest.mark.points(2)
@pytest.mark.heatmap(P + "mha_attention_weights", "weights")
def test_mha_matches_reference(student, reference):
    got, want = student.run(P + "mha_forward"), reference.run(P + "mha_forward")
    expect_cases(
        [
            (got["main"], want["main"], "what.mha_output", "on.mha_main"),
            (got["square"], want["square"], "what.mha_output", "on.mha_square"),
        ]
    )


@pytest.mark.points(1)
def test_mha_causal(student, reference):
    _causal(student.run(P + "mha_causal"), reference.run(P + "mha_causal"), "check.mha-causal", "what.mha_output")


@pytest.mark.points(1)
def test_mha_batch_independent(student, reference):
    got, want = student.run(P + "mha_batch"), reference.run(P + "mha_batch")
    expect_shape(got["batched"], want["batched"].shape, what="what.mha_output", on="on.mha_batch")
    expect_varies(got["batched"], what="what.mha_output", on="on.mha_batch")
    expect(torch.allclose(got["batched"], got["single"], atol=1e-5, rtol=1e-4), "check.mha-batch-independent")


@pytest.mark.points(1)
def test_mha_dropout(student, reference):
    got, want = student.run(P + "mha_dropout"), reference.run(P + "mha_dropout")
    expect_close(got["eval_a"], want["eval_a"], what="what.mha_output", on="on.mha_eval_dropout")
    expect(torch.equal(got["eval_a"], got["eval_b"]), "check.mha-eval-deterministic")
    train, evaluated = got["train"], got["eval_a"]
    expect_shape(train, evaluated.shape, what="what.mha_output", on="on.mha_train_dropout")
    expect(not torch.allclose(train, evaluated), "check.mha-train-no-dropout")
    # The first token attends only to itself (weight 1): with dropout on the attention weights
    # each head's part of its context vector is either dropped (0) or kept and scaled by 2.
    heads = want["num_heads"]
    first, first_eval = (
        train[:, 0].reshape(train.shape[0], heads, -1),
        evaluated[:, 0].reshape(train.shape[0], heads, -1),
    )
    dropped = (first.abs() <= 1e-6).all(dim=-1)
    kept = torch.isclose(first, 2 * first_eval, atol=1e-5, rtol=1e-4).all(dim=-1)
    expect(
        bool(torch.isfinite(train).all()) and bool((dropped | kept).all()) and bool(dropped.any()) and bool(kept.any()),
        "check.mha-dropout-placement",
    )


@pytest.mark.points(1)
def test_mha_float64_and_mask_buffer(student, reference):
    got, want = student.run(P + "mha_float64"), reference.run(P + "mha_float64")
    expect("mask" in got["buffers"], "check.mha-mask-buffer", buffers=got["buffers"] or "-")
    expect_close(got["out"], want["out"], what="what.mha_output", on="on.mha_float64", check_dtype=True)


@pytest.mark.points(1)
def test_mha_qkv_bias(student, reference):
    got, want = student.run(P + "mha_qkv_bias"), reference.run(P + "mha_qkv_bias")
    expect(not any(got["default_bias"]), "check.mha-qkv-bias-default")
    expect(all(got["with_bias"]), "check.mha-qkv-bias-missing")
    expect_close(got["out"], want["out"], what="what.mha_output", on="on.mha_qkv_bias")


@pytest.mark.points(1)
def test_mha_gradients(student, reference):
    got = student.run(P + "mha_gradients")
    reference.run(P + "mha_gradients")
    expect(not got["without_gradient"], "check.mha-gradients", names=got["without_gradient"])


@pytest.mark.points(1)
def test_mha_book_seeded_output(student, reference):
    got, want = student.run(P + "mha_book_seeded"), reference.run(P + "mha_book_seeded")
    # the book prints [0.3190, 0.4858] as the first row
    expect_close(got["out"], want["out"], what="what.mha_output", on="on.mha_book_seed", atol=1e-4)
