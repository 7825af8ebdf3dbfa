"""Hidden suite for sec3_3_simple_attention (book 3.3.1-3.3.2): attention without trainable weights."""

import pytest
import torch

from grader.suites.compare import expect, expect_cases, expect_depends, expect_shape

P = "sec3_3_simple_attention:"


@pytest.mark.points(1)
def test_attention_scores_for_query(student, reference):
    got, want = student.run(P + "scores_for_query"), reference.run(P + "scores_for_query")
    expect_cases(
        [
            (got["book_q2"], want["book_q2"], "what.attention_scores", "on.book_query2"),
            (got["random_q3"], want["random_q3"], "what.attention_scores", "on.random_5x4"),
        ]
    )


@pytest.mark.points(1)
def test_softmax_naive(student, reference):
    got, want = student.run(P + "softmax_naive"), reference.run(P + "softmax_naive")
    expect_cases(
        [
            (got["vector"], want["vector"], "what.softmax", "on.vector6"),
            (got["matrix"], want["matrix"], "what.softmax", "on.matrix3x5"),
        ]
    )


@pytest.mark.points(1)
def test_context_vector_for_query(student, reference):
    got, want = student.run(P + "context_vector_for_query"), reference.run(P + "context_vector_for_query")
    expect_cases(
        [
            (got["book_q2"], want["book_q2"], "what.context_vector", "on.book_query2"),
            (got["random_q0"], want["random_q0"], "what.context_vector", "on.random_5x4"),
        ]
    )


@pytest.mark.points(1)
def test_attention_scores(student, reference):
    got, want = student.run(P + "attention_scores"), reference.run(P + "attention_scores")
    expect_cases(
        [
            (got["book"], want["book"], "what.attention_scores", "on.book_sentence"),
            (got["random"], want["random"], "what.attention_scores", "on.random_5x4"),
        ]
    )


@pytest.mark.points(2)
@pytest.mark.heatmap(P + "attention_weights", "book")
def test_attention_weights(student, reference):
    got, want = student.run(P + "attention_weights"), reference.run(P + "attention_weights")
    expect_cases(
        [
            (got["book"], want["book"], "what.attention_weights", "on.book_sentence"),
            (got["random"], want["random"], "what.attention_weights", "on.random_5x4"),
        ]
    )


@pytest.mark.points(1)
def test_attention_weights_rows_sum_to_one(student):
    got = student.run(P + "attention_weights")
    weights = got["random"]
    expect_shape(weights, (5, 5), what="what.attention_weights", on="on.random_5x4")
    # weights that sum to one whatever the inputs (uniform, the identity) are no attention yet
    expect_depends(got["other"], weights, what="what.attention_weights", on="on.two_random_5x4")
    row_sums = weights.sum(dim=-1)
    expect(
        torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-5),
        "check.rows-sum-to-one",
        sums=[round(float(s), 4) for s in row_sums],
    )


@pytest.mark.points(2)
def test_context_vectors(student, reference):
    got, want = student.run(P + "context_vectors"), reference.run(P + "context_vectors")
    expect_cases(
        [
            (got["book"], want["book"], "what.context_vectors", "on.book_sentence"),
            (got["random"], want["random"], "what.context_vectors", "on.random_5x4"),
        ]
    )
