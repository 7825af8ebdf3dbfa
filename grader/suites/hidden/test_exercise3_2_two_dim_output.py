"""Hidden suite for exercise3_2_two_dim_output (Exercise 3.2): two heads, 2-dimensional output."""

import pytest

from grader.suites.compare import expect_close, expect_equal

P = "exercise3_2_two_dim_output:"


@pytest.mark.uses("sec3_6_multi_head_attention::test_wrapper_concatenates_heads")  # the output's shape
@pytest.mark.points(2)
def test_two_heads_two_dimensional_output(student, reference):
    got, want = student.run(P + "structure"), reference.run(P + "structure")
    expect_equal(got["output_shape"], want["output_shape"], what="what.ex3_2_output_shape", on="on.ex3_2_build")
    expect_equal(got["num_heads"], want["num_heads"], what="what.ex3_2_num_heads", on="on.ex3_2_build")
    expect_equal(
        got["query_weight_shapes"], want["query_weight_shapes"], what="what.ex3_2_query_shapes", on="on.ex3_2_build"
    )


@pytest.mark.uses(
    "sec3_6_multi_head_attention::test_wrapper_matches_reference",
    "sec3_5_causal_attention::test_causal_attention_matches_reference",
    "sec3_5_causal_attention::test_causal_attention_book_seed",  # the heads' parameters, seeded
)
@pytest.mark.points(2)
def test_seeded_output(student, reference):
    got, want = student.run(P + "seeded_output"), reference.run(P + "seeded_output")
    # first row [-0.5740, 0.2216] (the book's exercise notebook prints an older value)
    expect_close(got["out"], want["out"], what="what.ex3_2_output", on="on.ex3_2_seed", atol=1e-4)
