"""Hidden suite for exercise3_3_gpt2_attention (Exercise 3.3): GPT-2 small's attention module."""

import pytest
import torch

from grader.suites.compare import (
    expect,
    expect_close,
    expect_equal,
    expect_shape,
    follows_own_non_causal,
    judged_against,
)

P = "exercise3_3_gpt2_attention:"


# the class's own configuration: head_dim and the rejection of an indivisible d_out (how the class
# handles qkv_bias, its other setting, the diagnosis reads off its own probe: grader.diagnosis.catalogue.signatures)
@pytest.mark.uses("sec3_6_multi_head_attention::test_mha_configuration")
@pytest.mark.points(1)
def test_parameter_count(student, reference):
    got, want = student.run(P + "configuration"), reference.run(P + "configuration")
    expect_equal(got["num_parameters"], want["num_parameters"], what="what.ex3_3_num_parameters", on="on.ex3_3_build")


@pytest.mark.uses("sec3_6_multi_head_attention::test_mha_configuration")
@pytest.mark.points(2)
def test_configuration(student, reference):
    got, want = student.run(P + "configuration"), reference.run(P + "configuration")
    for name in ("d_out", "num_heads", "head_dim", "mask_size", "qkv_bias"):
        expect_equal(got[name], want[name], what=f"what.ex3_3_{name}", on="on.ex3_3_build")


# judged against the student's own MultiHeadAttention in GPT-2 small's configuration when that differs
# from the reference's: Exercise 3.3 is about building the module, a mistake of 3.6 is charged there only
@pytest.mark.uses(
    "sec3_6_multi_head_attention::test_mha_matches_reference", "sec3_6_multi_head_attention::test_mha_causal", own=True
)
@pytest.mark.points(1)
def test_forward_is_causal(student, reference):
    got, want = student.run(P + "forward"), reference.run(P + "forward")
    keep = want["keep"]
    own = student.outputs(P + "own_class_forward") or {}
    if follows_own_non_causal(got, own.get("out"), own.get("changed"), keep):
        return  # what the student's own MultiHeadAttention gives, built as asked: 3.6's mistake
    expected = judged_against(got["out"], want["out"], own.get("out"), own_must_vary=False)
    if expected is want["out"]:
        expect_close(got["out"], expected, what="what.ex3_3_output", on="on.ex3_3_forward", atol=1e-4)
    elif expected is not None:  # None: exactly what the student's own MultiHeadAttention gives
        expect_close(got["out"], expected, what="what.ex3_3_output_own", on="on.ex3_3_forward", atol=1e-4)
    expect_shape(got["changed"], want["changed"].shape, what="what.ex3_3_output", on="on.ex3_3_forward")
    expect(
        torch.allclose(got["out"][:, :keep], got["changed"][:, :keep], atol=1e-5, rtol=1e-4),
        "check.ex3_3-causal",
        keep=keep,
    )
