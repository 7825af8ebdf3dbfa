"""Doing nothing earns nothing: a property check (causality, batch independence, dropout, rows that
sum to one, parameters kept after a transfer) passes only when the code also does the work the
property is about, judged in the trusted suite from the outputs. Forwards that return zeros, a
constant, or the input echoed (through a projection, token by token) lose those checks, with a
message saying why in the student's terms; correct code keeps them (the other suite tests)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader.answer_key import reference_results
from grader.i18n import Catalog
from grader.probe_outputs import ProbeOutputs
from grader.suites.hidden_suites import collect
from tests.conftest import solutions_as_submission
from tests.inprocess import probe_results

S3 = "sec3_3_simple_attention"
S4 = "sec3_4_self_attention"
S5 = "sec3_5_causal_attention"
S6 = "sec3_6_multi_head_attention"
E1 = "exercise3_1_weight_transfer"
IGNORES_INPUT = "mismatch.ignores-input"
LATER_IGNORE_EARLIER = "mismatch.later-ignore-earlier"
# each example grades a module in-process (a few seconds): a few, and no shrinking of a failure
GENERATED = settings(
    max_examples=3, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow]
)
CONSTANTS = st.floats(-3, 3, allow_nan=False).filter(lambda c: abs(c) > 0.05)


@functools.cache
def _suites():
    return collect(), ProbeOutputs(reference_results())


def judged(module: str, appended: str) -> dict:
    """The hidden tests of `module` on the reference solutions with `appended` added to it."""
    with tempfile.TemporaryDirectory() as folder:
        submission = solutions_as_submission(Path(folder))
        target = submission / f"{module}.py"
        target.write_text(target.read_text() + "\n" + appended)
        probes = [name for name in reference_results() if name.startswith(module + ":")]
        results = probe_results(submission, "pytorch", probes)
    suites, reference = _suites()
    return {o.name: o for o in suites.run(ProbeOutputs(results), reference) if o.module == module}


def failed_with(outcomes: dict, names: list[str], key: str) -> None:
    for name in names:
        outcome = outcomes[name]
        assert outcome.status == "failed" and outcome.points == 0, (name, outcome.status, outcome.error)
        assert outcome.detail is not None and outcome.detail.key == key, (name, outcome.detail)


def forward(cls: str, body: str) -> str:
    return f"def _forward(self, x):\n    return {body}\n\n\n{cls}.forward = _forward\n"


# -- 3.5 CausalAttention ------------------------------------------------------------------------

S5_PROPERTIES = ["test_causality", "test_batch_independence", "test_dropout_in_train_mode"]
S5_CLASS = S5_PROPERTIES + [
    "test_causal_attention_matches_reference",
    "test_causal_attention_book_seed",
    "test_eval_mode_is_deterministic_and_dropout_free",
    "test_qkv_bias",
    "test_gradients_reach_every_parameter",
]


def constant_causal_attention(body: str) -> None:
    outcomes = judged(S5, forward("CausalAttention", body))
    failed_with(outcomes, S5_PROPERTIES, IGNORES_INPUT)
    assert not any(outcomes[name].points for name in S5_CLASS), body


@pytest.mark.parametrize("body", ["self.W_value(x) * 0", "self.dropout(torch.ones_like(self.W_value(x)))"])
def test_a_causal_attention_of_zeros_or_dropped_ones_loses_its_property_checks(body):
    constant_causal_attention(body)


@GENERATED
@given(c=CONSTANTS)
def test_a_constant_causal_attention_loses_its_property_checks(c):
    constant_causal_attention(f"self.W_value(x) * 0 + {c!r}")


@GENERATED
@given(a=CONSTANTS)
def test_a_token_by_token_causal_attention_is_not_causal_for_nothing(a):
    outcomes = judged(S5, forward("CausalAttention", f"self.dropout(self.W_value(x) * {a!r})"))
    failed_with(outcomes, ["test_causality"], LATER_IGNORE_EARLIER)
    assert outcomes["test_dropout_in_train_mode"].status == "failed"  # dropout on the values, not on weights
    assert outcomes["test_batch_independence"].status == "passed"  # it is, and its outputs depend on the input


# -- 3.6 MultiHeadAttention and the wrapper ---------------------------------------------------------


@pytest.mark.parametrize("body", ["self.out_proj(self.W_value(x)) * 0", "self.out_proj(self.W_value(x)) * 0 + 0.7"])
def test_a_constant_multi_head_attention_loses_its_property_checks(body):
    outcomes = judged(S6, forward("MultiHeadAttention", body))
    failed_with(outcomes, ["test_mha_causal", "test_mha_batch_independent"], IGNORES_INPUT)


def test_a_token_by_token_multi_head_attention_is_not_causal_for_nothing():
    outcomes = judged(S6, forward("MultiHeadAttention", "self.out_proj(self.W_value(x))"))
    failed_with(outcomes, ["test_mha_causal"], LATER_IGNORE_EARLIER)
    assert outcomes["test_mha_batch_independent"].status == "passed"


@pytest.mark.parametrize("scale", ["0", "0 + 1.5"])
def test_a_constant_wrapper_loses_its_property_checks(scale):
    body = f"torch.cat([head.W_value(x) for head in self.heads], dim=-1) * {scale}"
    outcomes = judged(S6, forward("MultiHeadAttentionWrapper", body))
    failed_with(outcomes, ["test_wrapper_causal"], IGNORES_INPUT)
    assert outcomes["test_wrapper_concatenates_heads"].points == 0


def test_a_wrapper_whose_heads_do_nothing_loses_its_property_checks():
    heads = forward("CausalAttention", "self.W_value(x) * 0")
    outcomes = judged(S6, "from sec3_5_causal_attention import CausalAttention\n\n\n" + heads)
    failed_with(outcomes, ["test_wrapper_causal", "test_wrapper_concatenates_heads"], IGNORES_INPUT)


# -- 3.3, 3.4, Exercise 3.1 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights", ["torch.full((len(inputs), len(inputs)), 1.0 / len(inputs))", "torch.eye(len(inputs))"]
)
def test_weights_that_sum_to_one_whatever_the_input_are_no_attention(weights):
    outcomes = judged(S3, f"def attention_weights(inputs):\n    return {weights}\n")
    failed_with(outcomes, ["test_attention_weights_rows_sum_to_one"], IGNORES_INPUT)


@pytest.mark.parametrize("body", ["x @ self.W_value * 0", "x @ self.W_value * 0 + 1", "x @ self.W_value"])
def test_self_attention_v1_that_does_nothing_earns_nothing_for_it(body):
    outcomes = judged(S4, forward("SelfAttention_v1", body))
    for name in (
        "test_self_attention_v1_book_seed",
        "test_self_attention_v1_matches_reference",
        "test_gradients_reach_every_parameter",
    ):
        assert outcomes[name].points == 0, name


@pytest.mark.parametrize("body", ["self.W_value(x) * 0", "self.W_value(x) * 0 + 1", "self.W_value(x)"])
def test_self_attention_v2_that_does_nothing_earns_nothing_for_it(body):
    outcomes = judged(S4, forward("SelfAttention_v2", body))
    for name in (
        "test_self_attention_v2_matches_reference",
        "test_self_attention_v2_qkv_bias",
        "test_gradients_reach_every_parameter",
    ):
        assert outcomes[name].points == 0, name


def test_a_transfer_that_copies_nothing_earns_nothing():
    outcomes = judged(E1, "def transfer_weights(sa_v2, sa_v1):\n    pass\n")
    assert not any(o.points for o in outcomes.values())
    failed_with(outcomes, ["test_v1_keeps_trainable_parameters"], "check.v1-nothing-transferred")


@pytest.mark.parametrize(
    "key", [IGNORES_INPUT, LATER_IGNORE_EARLIER, "check.v1-nothing-transferred", "mismatch.complex"]
)
def test_the_messages_exist_in_both_languages(key):
    for lang in ("en", "zh"):
        assert Catalog(lang).t(key, what="W", on="O", got="complex64") != key
