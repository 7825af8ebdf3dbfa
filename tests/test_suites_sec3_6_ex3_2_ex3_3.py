"""The hidden suites of 3.6 and Exercises 3.2/3.3 on known submissions, in one grading run:
every buggy submission is named by its misconception on the tests where the bug shows, every
independently written correct submission earns full marks there, and the stubs earn nothing."""

from __future__ import annotations

import re
import shutil

import pytest

from grader.run import grade
from tests.buggy import all_buggy, buggy
from tests.conftest import ROOT, stubs_as_submission

SUBMISSIONS = ROOT / "tests" / "submissions"
SECTIONS = ("3.6", "ex3.2", "ex3.3")
MHA = "sec3_6_multi_head_attention::"
EX2 = "exercise3_2_two_dim_output::"
EX3 = "exercise3_3_gpt2_attention::"

# buggy folder -> the tests that must fail, each with the misconception it must be named by
EXPECTED = {
    "heads-split-wrong-mha": {
        MHA + "test_mha_matches_reference": "heads-split-wrong",
        MHA + "test_mha_causal": "heads-split-wrong",
    },
    "heads-merged-wrong-mha": {MHA + "test_mha_matches_reference": "heads-merged-wrong"},
    "out-proj-missing-mha": {
        MHA + "test_mha_matches_reference": "out-proj-missing",
        MHA + "test_mha_gradients": "out-proj-missing",
    },
    "heads-not-registered-mha": {MHA + "test_wrapper_registers_heads": "heads-not-registered"},
    "concat-wrong-dim-mha": {
        MHA + "test_wrapper_concatenates_heads": "concat-wrong-dim",
        MHA + "test_wrapper_matches_reference": "concat-wrong-dim",
    },
    "concat-wrong-dim-mha-2": {
        MHA + "test_wrapper_concatenates_heads": "concat-wrong-dim",
        MHA + "test_wrapper_matches_reference": "concat-wrong-dim",
    },
    # the wrapper's mistake, charged once: Exercise 3.2's check of its output shape is blocked by it
    "concat-wrong-dim-ex3_2": {MHA + "test_wrapper_concatenates_heads": "concat-wrong-dim"},
    "mask-not-sliced-mha": {MHA + "test_mha_matches_reference": "mask-not-sliced"},
    "hardcoded-shape-mha": {MHA + "test_mha_matches_reference": "hardcoded-shape"},
    "dropout-misplaced-mha": {MHA + "test_mha_dropout": "dropout-misplaced"},
    "dropout-misplaced-mha-2": {MHA + "test_mha_dropout": "dropout-misplaced"},
    "missing-scaling-mha": {MHA + "test_mha_matches_reference": "missing-scaling"},
    "wrong-scaling-mha": {MHA + "test_mha_matches_reference": "wrong-scaling"},
    "wrong-init-mha": {MHA + "test_mha_book_seeded_output": "wrong-init"},
    "qkv-bias-ignored-mha": {MHA + "test_mha_qkv_bias": "qkv-bias-ignored"},
    "wrong-config-ex3_2": {
        EX2 + "test_two_heads_two_dimensional_output": "wrong-config",
        EX2 + "test_seeded_output": "wrong-config",
    },
    "wrong-config-ex3_2-2": {
        EX2 + "test_two_heads_two_dimensional_output": "wrong-config",
        EX2 + "test_seeded_output": "wrong-config",
    },
    "wrong-config-ex3_3": {EX3 + "test_configuration": "wrong-config"},
    "wrong-config-ex3_3-2": {
        EX3 + "test_configuration": "wrong-config",
        EX3 + "test_forward_is_causal": "wrong-config",
    },
    "wrong-config-ex3_3-3": {EX3 + "test_parameter_count": "wrong-config", EX3 + "test_configuration": "wrong-config"},
}
SECTION_MODULES = {
    "3.6": "sec3_6_multi_head_attention",
    "ex3.2": "exercise3_2_two_dim_output",
    "ex3.3": "exercise3_3_gpt2_attention",
}
# every correct submission that implements 3.6 (others' folders may hold only earlier sections)
CORRECT = sorted(
    p.name for p in (SUBMISSIONS / "correct").iterdir() if (p / "sec3_6_multi_head_attention.py").is_file()
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("sec3_6_ex3_2_ex3_3")
    klass = base / "class"
    for name in EXPECTED:
        buggy(name).write(klass / f"buggy-{name}")
    for name in CORRECT:
        shutil.copytree(SUBMISSIONS / "correct" / name, klass / f"correct-{name}")
    stubs_as_submission(klass / "stubs")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}


def _ours(result):
    return [t for t in result.tests if t.section in SECTIONS]


def test_every_buggy_folder_is_expected():
    folders = {b.name for b in all_buggy()}
    ours = {f for f in folders if re.search(r"-(mha|ex3_2|ex3_3)(-\d+)?$", f)}
    assert ours <= set(EXPECTED), ours - set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_buggy_submission_is_diagnosed(graded, name):
    result = graded[f"buggy-{name}"]
    outcomes = {t.id: t for t in result.tests}
    for test_id, misconception in EXPECTED[name].items():
        outcome = outcomes[test_id]
        assert outcome.status in ("failed", "error"), (test_id, outcome.status)
        assert outcome.points == 0
        assert outcome.misconception == misconception, (test_id, outcome.misconception, outcome.message)
    # whatever else fails in these sections is never blamed on an unrelated misconception
    named = {t.misconception for t in _ours(result) if t.misconception}
    assert named <= set(EXPECTED[name].values()), named


@pytest.mark.parametrize("name", CORRECT)
def test_correct_submission_earns_full_marks(graded, name):
    result = graded[f"correct-{name}"]
    present = [
        s for s, module in SECTION_MODULES.items() if (SUBMISSIONS / "correct" / name / f"{module}.py").is_file()
    ]
    tests = [t for t in result.tests if t.section in present]
    failing = {t.id: (t.status, t.message) for t in tests if t.status != "passed"}
    assert not failing
    scores = {s.id: (s.score, s.max_score) for s in result.sections}
    for section in present:
        assert scores[section][0] == scores[section][1] > 0
    assert all(t.misconception is None for t in tests)


def test_stubs_score_zero(graded):
    result = graded["stubs"]
    scores = {s.id: s.score for s in result.sections}
    assert all(scores[section] == 0 for section in SECTIONS)
    assert all(t.status == "error" and t.misconception is None for t in _ours(result))


def test_points(graded):
    maxima = {s.id: s.max_score for s in graded["stubs"].sections}
    assert maxima["3.6"] == 15 and maxima["ex3.2"] == 4 and maxima["ex3.3"] == 4
