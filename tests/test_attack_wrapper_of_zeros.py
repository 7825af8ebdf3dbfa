"""Round-four attack on "a mistake costs points once": `test_wrapper_matches_reference` (2 points)
judges the wrapper against the student's own CausalAttention heads side by side when those differ
from the reference's (`judged_against`). With heads whose forward returns zeros (charged in 3.5), a
wrapper whose forward returns zeros of the right shape, never calling its heads, is "exactly the
student's own heads" and passed: a forward that did nothing earned 2 points. Own heads whose outputs
do not vary leave no evidence that the wrapper uses them: it is judged against the reference."""

from __future__ import annotations

from tests.test_degenerate_forwards import S6, forward, judged

HEADS = forward("CausalAttention", "self.W_value(x) * 0")
WRAPPER = forward(
    "MultiHeadAttentionWrapper", "x.new_zeros(x.shape[0], x.shape[1], sum(h.W_value.out_features for h in self.heads))"
)


def test_a_wrapper_that_returns_zeros_earns_nothing_for_matching():
    outcomes = judged(S6, "from sec3_5_causal_attention import CausalAttention\n\n\n" + HEADS + "\n" + WRAPPER)
    outcome = outcomes["test_wrapper_matches_reference"]
    assert outcome.status == "failed" and outcome.points == 0
