"""Hidden suite for exercise3_1_weight_transfer (Exercise 3.1): SelfAttention_v1 made to compute
what SelfAttention_v2 computes, by copying the weights.

The student's copied matrices are used in SelfAttention_v1's computation (written out here, trusted)
and compared with the same computation on the reference's copies, which is SelfAttention_v2's output.
"""

import pytest
import torch

from grader.probes import randn
from grader.probes.exercise3_1_weight_transfer import before_transfer
from grader.suites.compare import expect, expect_close, expect_shape

P = "exercise3_1_weight_transfer:"
NAMES = ("W_query", "W_key", "W_value")


def v1_forward(x: torch.Tensor, m: dict) -> torch.Tensor:
    """SelfAttention_v1.forward with the given (d_in, d_out) matrices."""
    queries, keys, values = x @ m["W_query"], x @ m["W_key"], x @ m["W_value"]
    weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values


def check(student, reference, probe: str, d_in: int, on: str) -> None:
    got, want = student.run(P + probe), reference.run(P + probe)
    for name in NAMES:
        expect_shape(got[name], want[name].shape, what=f"what.sa_v1_{name}", on=on)
    matrices = {name: got[name].double() for name in NAMES}
    expected = {name: want[name].double() for name in NAMES}
    for seed in (351, 352):
        x = randn(6, d_in, seed=seed, dtype=torch.float64)
        expect_close(v1_forward(x, matrices), v1_forward(x, expected), what="what.v1_after_transfer", on=on)


@pytest.mark.points(2)
def test_v1_matches_v2_square(student, reference):
    check(student, reference, "square", 4, "on.transfer_4_to_4")


@pytest.mark.points(2)
def test_v1_matches_v2_book_sizes(student, reference):
    check(student, reference, "rectangular", 3, "on.transfer_3_to_2")


@pytest.mark.points(1)
def test_v1_keeps_trainable_parameters(student, reference):
    got, want = student.run(P + "square"), reference.run(P + "square")
    before = before_transfer("square")
    for name in NAMES:
        expect_shape(got[name], want[name].shape, what=f"what.sa_v1_{name}", on="on.transfer_4_to_4")
    # parameters kept, but nothing copied into them, is no transfer yet
    expect(not all(torch.equal(got[name], before[name]) for name in NAMES), "check.v1-nothing-transferred")
    expect(
        got["parameters"] == want["parameters"],
        "check.v1-still-parameters",
        got=", ".join(f"{n} {tuple(s)}" for n, s, _ in got["parameters"]) or "-",
    )
