"""Hidden suite for exercise3_2_two_dim_output (Exercise 3.2): two heads, 2-dimensional output."""

import pytest

from grader.suites.compare import expect_close, expect_equal, judged_against

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


# judged against the student's own MultiHeadAttentionWrapper (and heads) in the exercise's configuration
# when that differs from the reference's: the earlier sections' mistakes are charged there only
@pytest.mark.uses(
    "sec3_6_multi_head_attention::test_wrapper_matches_reference",
    "sec3_5_causal_attention::test_causal_attention_matches_reference",
    "sec3_5_causal_attention::test_causal_attention_book_seed",  # the heads' parameters, seeded
    own=True,
)
@pytest.mark.points(2)
def test_seeded_output(student, reference):
    got, want = student.run(P + "seeded_output"), reference.run(P + "seeded_output")
    own_classes = student.outputs(P + "seeded_own_classes")
    expected = judged_against(got["out"], want["out"], own_classes.get("out") if own_classes else None)
    # first row [-0.5740, 0.2216] (the book's exercise notebook prints an older value)
    if expected is want["out"]:
        expect_close(got["out"], expected, what="what.ex3_2_output", on="on.ex3_2_seed", atol=1e-4)
    elif expected is not None:  # None: exactly what the student's own classes give
        expect_close(got["out"], expected, what="what.ex3_2_output_own", on="on.ex3_2_seed", atol=1e-4)
