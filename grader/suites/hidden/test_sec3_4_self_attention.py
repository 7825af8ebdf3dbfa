"""Hidden suite for sec3_4_self_attention (book 3.4): self-attention with trainable weights."""

import pytest
import torch

from grader.suites.compare import expect, expect_cases, expect_close, expect_equal

P = "sec3_4_self_attention:"


@pytest.mark.points(1)
def test_project_qkv(student, reference):
    got, want = student.run(P + "project_qkv"), reference.run(P + "project_qkv")
    inputs = (("square", "on.random_5x4_square"), ("rect", "on.random_6x3_to_5"), ("f64", "on.float64"))
    expect_cases(
        [
            (got[f"{tag}_{name}"], want[f"{tag}_{name}"], f"what.{name}", on)
            for tag, on in inputs
            for name in ("queries", "keys", "values")
        ]
    )


@pytest.mark.points(2)
@pytest.mark.heatmap(P + "scaled_attention_weights", "book")
def test_scaled_attention_weights(student, reference):
    got, want = student.run(P + "scaled_attention_weights"), reference.run(P + "scaled_attention_weights")
    expect_cases(
        [
            (got["book"], want["book"], "what.attention_weights", "on.book_seeded_projections"),
            (got["random"], want["random"], "what.attention_weights", "on.random_qk_5x6"),
            (got["f64"], want["f64"], "what.attention_weights", "on.float64"),
        ]
    )


@pytest.mark.points(2)
def test_self_attention_v1_book_seed(student, reference):
    got, want = student.run(P + "v1_book_seed"), reference.run(P + "v1_book_seed")
    expect_close(got["book"], want["book"], what="what.context_vectors", on="on.book_seed_v1", atol=1e-4)


@pytest.mark.points(2)
def test_self_attention_v1_matches_reference(student, reference):
    got, want = student.run(P + "v1_transplanted"), reference.run(P + "v1_transplanted")
    expect_cases(
        [
            (got["square"], want["square"], "what.context_vectors", "on.v1_square"),
            (got["rect"], want["rect"], "what.context_vectors", "on.v1_rect"),
            (got["f64"], want["f64"], "what.context_vectors", "on.float64"),
        ]
    )


@pytest.mark.points(1)
def test_self_attention_v1_parameters(student, reference):
    got, want = student.run(P + "v1_parameters"), reference.run(P + "v1_parameters")
    expect(
        got["parameters"] == want["parameters"],
        "check.v1-parameters",
        got=", ".join(f"{name} {tuple(shape)}" for name, shape in got["parameters"]) or "-",
    )


@pytest.mark.points(2)
def test_self_attention_v2_matches_reference(student, reference):
    got, want = student.run(P + "v2_transplanted"), reference.run(P + "v2_transplanted")
    expect_cases(
        [
            (got["square"], want["square"], "what.context_vectors", "on.v2_square"),
            (got["rect"], want["rect"], "what.context_vectors", "on.v2_rect"),
            (got["f64"], want["f64"], "what.context_vectors", "on.float64"),
        ]
    )
    expect(
        sorted(got["parameters"]) == sorted(want["parameters"]),
        "check.v2-parameters-no-bias",
        got=", ".join(got["parameters"]) or "-",
    )


@pytest.mark.points(1)
def test_self_attention_v2_qkv_bias(student, reference):
    got, want = student.run(P + "v2_qkv_bias"), reference.run(P + "v2_qkv_bias")
    expect(got["parameters"] == want["parameters"], "check.qkv-bias-parameters", got=", ".join(got["parameters"]))
    expect_close(got["out"], want["out"], what="what.context_vectors", on="on.with_qkv_bias")


@pytest.mark.points(1)
def test_gradients_reach_every_parameter(student, reference):
    got, want = student.run(P + "gradients"), reference.run(P + "gradients")
    for cls in ("SelfAttention_v1", "SelfAttention_v2"):
        expect_equal(sorted(got[cls]), sorted(want[cls]), what="what.parameter_names", on=f"on.{cls}")
        for name, grad in got[cls].items():
            expect(
                type(grad) is torch.Tensor and bool(torch.isfinite(grad).all()) and bool(grad.abs().sum() > 0),
                "check.gradient-reaches",
                cls=cls,
                name=name,
            )
