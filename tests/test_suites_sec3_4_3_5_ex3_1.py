"""The hidden suites of 3.4, 3.5 and Exercise 3.1 against known submissions, in one grading run.

Each buggy submission (tests/submissions/buggy.toml: <misconception>[-n]) holds only the module it breaks;
its report must name its misconception on the tests where the mistake shows, and no other one.
Each correct submission (tests/submissions/correct/<name>/) earns full marks on these sections with
no diagnosis at all; so do the solutions; the stubs earn nothing, every test an error.
"""

from __future__ import annotations

import re
import shutil

import pytest

from grader.run import grade
from tests.buggy import buggy
from tests.conftest import ROOT, solutions_as_submission, stubs_as_submission

SECTIONS = {"3.4", "3.5", "ex3.1"}
S4 = "sec3_4_self_attention::"
S5 = "sec3_5_causal_attention::"
E1 = "exercise3_1_weight_transfer::"

S4_VALUES = [
    S4 + "test_scaled_attention_weights",
    S4 + "test_self_attention_v1_book_seed",
    S4 + "test_self_attention_v1_matches_reference",
    S4 + "test_self_attention_v2_matches_reference",
    S4 + "test_self_attention_v2_qkv_bias",
]
S5_CLASS = [
    S5 + "test_causal_attention_matches_reference",
    S5 + "test_causal_attention_book_seed",
    S5 + "test_eval_mode_is_deterministic_and_dropout_free",
    S5 + "test_qkv_bias",
]
S5_SHORT = [
    S5 + "test_causal_attention_matches_reference",
    S5 + "test_causality",
    S5 + "test_batch_independence",
    S5 + "test_eval_mode_is_deterministic_and_dropout_free",
    S5 + "test_dropout_in_train_mode",
    S5 + "test_qkv_bias",
    S5 + "test_gradients_reach_every_parameter",
]

# buggy submission -> tests that must fail naming the submission's misconception
BUGGY: dict[str, list[str]] = {
    "missing-scaling": S4_VALUES,
    "wrong-scaling": S4_VALUES,
    "wrong-scaling-2": S4_VALUES,
    "softmax-wrong-dim": S4_VALUES,
    "softmax-wrong-dim-2": S5_CLASS + [S5 + "test_causality"],
    "wrong-init": [S4 + "test_self_attention_v1_book_seed"],
    "wrong-init-2": [S4 + "test_self_attention_v1_book_seed"],
    "qkv-bias-ignored": [S4 + "test_self_attention_v2_qkv_bias"],
    "qkv-bias-ignored-2": [S5 + "test_qkv_bias"],
    "mask-not-applied": [S5 + "test_masked_attention_weights", S5 + "test_causality"] + S5_CLASS,
    "mask-includes-diagonal": [S5 + "test_masked_attention_weights", S5 + "test_causality"] + S5_CLASS,
    "mask-inverted": [
        S5 + "test_simple_causal_mask",
        S5 + "test_mask_and_renormalize",
        S5 + "test_masked_attention_weights",
        S5 + "test_causality",
    ]
    + S5_CLASS,
    "mask-not-sliced": S5_SHORT,
    "mask-not-sliced-2": S5_SHORT,
    "mask-after-softmax-unnormalized": [S5 + "test_mask_and_renormalize"] + S5_CLASS,
    "dropout-misplaced": [S5 + "test_dropout_in_train_mode"],
    "dropout-misplaced-2": [S5 + "test_eval_mode_is_deterministic_and_dropout_free", S5 + "test_dropout_in_train_mode"],
    "dropout-misplaced-3": [S5 + "test_dropout_in_train_mode"],
    "hardcoded-shape": S5_SHORT,
    "hardcoded-shape-2": S5_SHORT,
    "weights-not-transposed": [E1 + "test_v1_matches_v2_square", E1 + "test_v1_matches_v2_book_sizes"],
    "weights-not-transposed-2": [E1 + "test_v1_matches_v2_square", E1 + "test_v1_matches_v2_book_sizes"],
    "weights-swapped": [E1 + "test_v1_matches_v2_square", E1 + "test_v1_matches_v2_book_sizes"],
}
# tests that must still pass (the mistake does not show there)
MUST_PASS: dict[str, list[str]] = {
    "wrong-init": [S4 + "test_self_attention_v1_matches_reference", S4 + "test_self_attention_v1_parameters"],
    "wrong-init-2": [S4 + "test_self_attention_v1_matches_reference"],
    "qkv-bias-ignored": [S4 + "test_self_attention_v2_matches_reference"],
    "mask-not-sliced": [S5 + "test_causal_attention_book_seed"],
    "hardcoded-shape": [S5 + "test_causal_attention_book_seed"],
    "hardcoded-shape-2": [S5 + "test_causal_attention_book_seed"],
    "dropout-misplaced": [
        S5 + "test_eval_mode_is_deterministic_and_dropout_free",
        S5 + "test_causal_attention_matches_reference",
    ],
    "dropout-misplaced-3": [S5 + "test_eval_mode_is_deterministic_and_dropout_free"],
    "softmax-wrong-dim-2": [S5 + "test_masked_attention_weights", S5 + "test_batch_independence"],
    "weights-not-transposed-2": [E1 + "test_v1_keeps_trainable_parameters"],
}
RAW_KEY = re.compile(r"(?<![\w.])(what|on|check|mismatch|contract|tests|misconceptions)\.[a-z]")
CORRECT = ["einsum-raw-params", "sdpa-is-causal", "sdpa-attn-mask", "renorm-after-softmax"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("s345")
    klass = base / "class"
    for name in BUGGY:
        buggy(name).write(klass / f"buggy-{name}")
    for name in CORRECT:
        shutil.copytree(ROOT / "tests" / "submissions" / "correct" / name, klass / f"correct-{name}")
    solutions_as_submission(klass / "solutions")
    stubs_as_submission(klass / "stubs")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}


def outcomes(result) -> dict:
    return {t.id: t for t in result.tests if t.section in SECTIONS}


def show(result) -> dict:
    return {
        t.id: (t.status, t.misconception, t.message[:160])
        for t in result.tests
        if t.section in SECTIONS and t.status != "passed"
    }


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_submission_is_diagnosed_where_the_mistake_shows(graded, name):
    result = graded[f"buggy-{name}"]
    misconception = name.rsplit("-", 1)[0] if name[-1].isdigit() else name
    tests = outcomes(result)
    for test_id in BUGGY[name]:
        outcome = tests[test_id]
        assert outcome.status != "passed", (test_id, show(result))
        assert outcome.misconception == misconception, (test_id, show(result))
    for test_id in MUST_PASS.get(name, []):
        assert tests[test_id].status == "passed", (test_id, show(result))
    wrong = {t.id: t.misconception for t in tests.values() if t.misconception not in (None, misconception)}
    assert not wrong, wrong


@pytest.mark.parametrize("name", CORRECT + ["solutions"])
def test_correct_submission_earns_full_marks_without_diagnosis(graded, name):
    result = graded[name if name == "solutions" else f"correct-{name}"]
    for section in result.sections:
        if section.id in SECTIONS:
            assert section.score == section.max_score > 0, show(result)
    assert all(t.misconception is None for t in outcomes(result).values())


def test_points_per_section(graded):
    sections = {s.id: s.max_score for s in graded["solutions"].sections}
    assert sections["3.4"] == 12 and sections["3.5"] == 14 and sections["ex3.1"] == 5


def test_stubs_earn_nothing_with_errors(graded):
    result = graded["stubs"]
    tests = outcomes(result)
    assert tests and {t.status for t in tests.values()} == {"error"}
    assert sum(t.points for t in tests.values()) == 0


def test_every_test_and_key_has_messages_in_both_languages(graded):
    """Titles and hints of every test, and the messages of every diagnosed misconception."""
    from grader.i18n import Catalog

    ids = set(outcomes(graded["solutions"]))
    for lang in ("en", "zh"):
        catalog = Catalog(lang)
        for test_id in ids:
            for field in ("title", "hint"):
                assert catalog.t(f"tests.{test_id}.{field}") != f"tests.{test_id}.{field}", (lang, test_id)
        for name in BUGGY:
            misconception = name.rsplit("-", 1)[0] if name[-1].isdigit() else name
            for field in ("title", "explanation", "hint"):
                key = f"misconceptions.{misconception}.{field}"
                assert catalog.t(key) != key, (lang, key)


def test_failure_messages_are_rendered(graded):
    """No raw catalogue key leaks into a message of these sections."""
    for name in BUGGY:
        for t in outcomes(graded[f"buggy-{name}"]).values():
            assert not RAW_KEY.search(t.message), (name, t.id, t.message)
