"""MindSpore submissions graded by `grade` as instructors run it (the sandbox's MindSpore
workers, the hidden suites, diagnosis, reports), next to PyTorch ones in one class.

The "port-style" student is written as exercise-api.md §4 describes the chapter's Chinese
MindSpore port: `Parameter(mask, requires_grad=False)` masks, `ops.rand` initialisation, and a
leftover `set_context(mode=PYNATIVE_MODE, device_target="Ascend")` in every module, which raises on
a CPU-only machine and must cost no points.
"""

from __future__ import annotations

import csv
import json
import shutil

import pytest

pytest.importorskip("mindspore")

from grader.run import grade
from tests.buggy import buggy
from tests.conftest import ROOT, mindspore_solutions_as_submission, solutions_as_submission

EXAMPLES = ROOT / "examples" / "mindspore-class"
# correct MindSpore submissions written otherwise than the reference (other ops, mask kept as a
# boolean Parameter, functional forms, CellList.append, keyword arguments...)
# (in their own folder: the PyTorch suites' tests grade every folder of tests/submissions/correct)
CORRECT = sorted(p.name for p in (ROOT / "tests" / "submissions" / "correct-mindspore").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("ms-class")
    klass = base / "class"
    for name in ("mei", "port-style"):
        shutil.copytree(EXAMPLES / name, klass / name)
    shutil.copytree(
        ROOT / "grader" / "exercises" / "mindspore", klass / "ms-stubs", ignore=shutil.ignore_patterns("*.md")
    )
    mindspore_solutions_as_submission(klass / "ms-solutions")
    solutions_as_submission(klass / "torch-solutions")
    for correct in CORRECT:
        shutil.copytree(ROOT / "tests" / "submissions" / "correct-mindspore" / correct, klass / correct)
    summary = grade(klass, base / "reports", force=True)
    return {r.submission: r for r in summary.results}, base / "reports", klass


def failing(result):
    return {t.id: (t.status, t.misconception, t.blocked_by) for t in result.tests if t.status != "passed"}


def test_each_submission_is_graded_on_its_own_track(graded):
    results, _, _ = graded
    assert {name: r.track for name, r in results.items()} == {
        "mei": "mindspore",
        "port-style": "mindspore",
        "ms-stubs": "mindspore",
        "ms-solutions": "mindspore",
        "torch-solutions": "pytorch",
        **{name: "mindspore" for name in CORRECT},
    }


def test_the_mindspore_reference_earns_full_marks_through_the_student_path(graded):
    results, _, _ = graded
    assert CORRECT
    for name in ("ms-solutions", "torch-solutions", *CORRECT):
        assert results[name].score == results[name].max_score > 0, failing(results[name])
        assert all(t.misconception is None for t in results[name].tests)


def test_the_mindspore_stubs_score_zero(graded):
    results, _, _ = graded
    stubs = results["ms-stubs"]
    assert stubs.score == 0
    assert {t.status for t in stubs.tests} == {"error"}
    assert {t.error.exc_type for t in stubs.tests if t.error} == {"NotImplementedError"}


def test_the_port_style_submission_loses_nothing_to_its_ascend_device_target(graded):
    results, _, _ = graded
    port = results["port-style"]
    assert port.score == port.max_score, failing(port)


def test_the_example_student_gets_the_score_and_diagnoses_it_deserves(graded):
    results, _, _ = graded
    mei = results["mei"]
    S33, S35, S36 = "sec3_3_simple_attention", "sec3_5_causal_attention", "sec3_6_multi_head_attention"
    expected = {
        # ops.softmax(..., dim=-1) in attention_weights (context_vectors uses it)
        f"{S33}::test_attention_weights": ("error", "dim-not-axis", None),
        f"{S33}::test_attention_weights_rows_sum_to_one": ("error", "dim-not-axis", None),
        f"{S33}::test_context_vectors": ("error", "dim-not-axis", None),
        # positional nn.Dropout(dropout): keep_prob 0.0 cannot be built
        **{
            f"{S35}::{name}": ("error", "dropout-keep-prob", None)
            for name in (
                "test_causal_attention_matches_reference",
                "test_causal_attention_book_seed",
                "test_causality",
                "test_batch_independence",
                "test_mask_is_a_buffer",
                "test_qkv_bias",
                "test_gradients_reach_every_parameter",
            )
        },
        # ... which the wrapper and Exercise 3.2 build on
        **{
            f"{S36}::{name}": ("error", None, S35)
            for name in (
                "test_wrapper_registers_heads",
                "test_wrapper_concatenates_heads",
                "test_wrapper_matches_reference",
                "test_wrapper_causal",
            )
        },
        "exercise3_2_two_dim_output::test_two_heads_two_dimensional_output": ("error", None, S35),
        "exercise3_2_two_dim_output::test_seeded_output": ("error", None, S35),
        # MultiHeadAttention's mask as a trainable Parameter
        f"{S36}::test_mha_float64_and_mask_buffer": ("failed", "mask-trainable", None),
        f"{S36}::test_mha_gradients": ("failed", "mask-trainable", None),
        # set_data(weight) without the transpose
        "exercise3_1_weight_transfer::test_v1_matches_v2_square": ("failed", "weights-not-transposed", None),
        "exercise3_1_weight_transfer::test_v1_matches_v2_book_sizes": ("failed", "weights-not-transposed", None),
        # model.eval() on a Cell
        "exercise3_3_gpt2_attention::test_parameter_count": ("error", "torch-api", None),
        "exercise3_3_gpt2_attention::test_configuration": ("error", "torch-api", None),
        "exercise3_3_gpt2_attention::test_forward_is_causal": ("error", "torch-api", None),
    }
    assert failing(mei) == expected
    assert mei.score == mei.max_score - sum(t.max_points for t in mei.tests if t.id in expected)


def test_reports_and_gradebook_show_the_track(graded):
    results, reports, _ = graded
    document = json.loads((reports / "mei" / "results.json").read_text(encoding="utf-8"))
    assert document["track"] == "mindspore"
    assert json.loads((reports / "torch-solutions" / "results.json").read_text())["track"] == "pytorch"
    rows = {row["student"]: row for row in csv.DictReader((reports / "gradebook.csv").read_text().splitlines())}
    assert rows["mei"]["track"] == "mindspore" and rows["torch-solutions"]["track"] == "pytorch"
    assert "Track: MindSpore" in (reports / "mei" / "feedback.md").read_text(encoding="utf-8")
    feedback = (reports / "mei" / "feedback.html").read_text(encoding="utf-8")
    assert "keep_prob" in feedback and "axis=" in feedback
    assert "(MindSpore)" in (reports / "summary.html").read_text(encoding="utf-8")


def test_a_regrade_reuses_the_results_with_their_track(graded, tmp_path):
    _, reports, klass = graded
    summary = grade(klass, reports, jobs=1)
    assert summary.graded == 0
    assert {r.submission: r.track for r in summary.results}["port-style"] == "mindspore"


def test_chinese_reports_explain_the_mindspore_traps(graded, tmp_path):
    _, _, klass = graded
    single = shutil.copytree(klass / "mei", tmp_path / "mei")
    summary = grade(single, tmp_path / "zh", lang="zh", force=True)
    text = (tmp_path / "zh" / "feedback.md").read_text(encoding="utf-8")
    assert summary.results[0].track == "mindspore"
    for phrase in ("框架：MindSpore（昇思）", "keep_prob", "axis=", "set_train(False)"):
        assert phrase in text, phrase


# -- the MindSpore buggy submissions of tests/submissions/buggy.toml (<misconception>-ms) -----------
S33, S34, S35 = "sec3_3_simple_attention", "sec3_4_self_attention", "sec3_5_causal_attention"
BUGGY = {
    "dim-not-axis-ms": {
        f"{S33}::{t}": "dim-not-axis"
        for t in ("test_attention_weights", "test_attention_weights_rows_sum_to_one", "test_context_vectors")
    },
    "dropout-keep-prob-ms": {
        f"{S35}::{t}": "dropout-keep-prob"
        for t in (
            "test_causal_attention_matches_reference",
            "test_causal_attention_book_seed",
            "test_causality",
            "test_batch_independence",
            "test_mask_is_a_buffer",
            "test_qkv_bias",
            "test_gradients_reach_every_parameter",
        )
    },
    "mask-trainable-ms": {
        f"{S35}::{t}": "mask-trainable"
        for t in (  # the mask among the parameters
            "test_mask_is_a_buffer",
            "test_qkv_bias",
            "test_gradients_reach_every_parameter",
        )
    },
    "torch-api-ms": {
        f"{S34}::{t}": "torch-api"
        for t in (
            "test_self_attention_v2_matches_reference",
            "test_self_attention_v2_qkv_bias",
            "test_gradients_reach_every_parameter",
        )
    },
}


@pytest.fixture(scope="module")
def graded_buggy(tmp_path_factory):
    base = tmp_path_factory.mktemp("ms-buggy")
    for name in BUGGY:
        buggy(name).write(base / "class" / name)
    return {r.submission: r for r in grade(base / "class", base / "reports", force=True).results}


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_mindspore_buggy_submission_is_diagnosed_where_its_mistake_shows(graded_buggy, name):
    module = next(iter(BUGGY[name])).split("::")[0]
    got = {t.id: t.misconception for t in graded_buggy[name].tests if t.module == module and t.status != "passed"}
    assert got == BUGGY[name]
