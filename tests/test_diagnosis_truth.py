"""What the diagnosis says is true on real students' code: the right cause, the right line, the right
blame, and evidence a student can act on. Each case in two code shapes, graded in process with
traces of what failed (student code runs in this process: these are all our own files).

- tests/submissions/stacked/<a>+<b>/<shape>/: two mistakes on one path, both named, nothing else;
- tests/submissions/unnamed/<mistake>/<shape>/: a mistake the catalogue has no name for (keys and
  values computed with W_query, an extra layer on the wrapper's output, a keyword the contract does
  not name): nothing named, and the line is where the values first depart (never a correct line);
- the sentences the issue found false, each with the shapes that provoked it;
- blame: a module's failure is charged to it once, and a test is blocked only by a module that fails
  tests of its own;
- evidence: the input case that failed, no NaN shown as an expected value, where to go next;
- results.json carries every diagnosis's file and line, exception-based ones included;
- a zero-size output never makes the heatmaps raise.
"""

from __future__ import annotations

import re
from pathlib import Path

import diagnosis as benchmark
import pytest
import torch

from grader import records
from grader.i18n import Catalog
from grader.probe_outputs import ProbeOutputs
from grader.records import Heatmap
from grader.report.diagnosis import diagnosis_record, diagnosis_view, outcome_hint
from grader.report.heatmaps import heatmap_view
from grader.report.messages import outcome_message
from grader.report.next_step import first_to_fix
from grader.run.stages import heatmaps
from tests.buggy import buggy
from tests.conftest import MODULES, ROOT

SUBMISSIONS = ROOT / "tests" / "submissions"
STACKED = sorted(p for p in (SUBMISSIONS / "stacked").glob("*/*") if p.is_dir())
UNNAMED = sorted(p for p in (SUBMISSIONS / "unnamed").glob("*/*") if p.is_dir())
M34, M35, M36 = "sec3_4_self_attention", "sec3_5_causal_attention", "sec3_6_multi_head_attention"
EX32, EX33 = "exercise3_2_two_dim_output", "exercise3_3_gpt2_attention"


def _solution(module: str) -> str:
    text = (ROOT / "solutions" / f"{module}.py").read_text()
    return re.sub(r"^from \.(\w+) import", r"from \1 import", text, flags=re.M)


def _edited(module: str, *changes: tuple[str, str]) -> dict[str, str]:
    text = _solution(module)
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return {module: text}


def _stub(module: str) -> dict[str, str]:
    return {module: (ROOT / "grader" / "exercises" / f"{module}.py").read_text()}


CLASS_BIAS = ("bias=qkv_bias", "bias=True")
CASES: dict[str, dict[str, str]] = {
    # an attribute missing from an nn.Module object, and from a Python module
    "object-attribute/v2-parameter": _edited(
        M34,
        (
            "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)",
            "self.W_query = nn.Parameter(torch.rand(d_out, d_in))",
        ),
        ("queries = self.W_query(x)  # (T, d_out)", "queries = x @ self.W_query.T  # (T, d_out)"),
    ),
    "object-attribute/causal-parameter": _edited(
        M35,
        (
            "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)",
            "self.W_query = nn.Parameter(torch.rand(d_out, d_in))",
        ),
        ("queries = self.W_query(x)  # (b, T, d_out)", "queries = x @ self.W_query.T  # (b, T, d_out)"),
    ),
    "module-attribute/v1-renamed": _edited(M34, ("class SelfAttention_v1(", "class SelfAttentionV1(")),
    "module-attribute/causal-renamed": {
        **_edited(M35, ("class CausalAttention(", "class CausalSelfAttention(")),
        **_edited(M36, ("import CausalAttention", "import CausalSelfAttention as CausalAttention")),
    },
    # blame
    "stub/ex3_2": _stub(EX32),
    "stub/ex3_3": _stub(EX33),
    "class-detail/head-dim-float": _edited(
        M36,
        ("self.head_dim = d_out // num_heads", "self.head_dim = d_out / num_heads"),
        ("keys.view(b, num_tokens, self.num_heads, self.head_dim)", "keys.view(b, num_tokens, self.num_heads, -1)"),
        ("values.view(b, num_tokens, self.num_heads, self.head_dim)", "values.view(b, num_tokens, self.num_heads, -1)"),
        (
            "queries.view(b, num_tokens, self.num_heads, self.head_dim)",
            "queries.view(b, num_tokens, self.num_heads, -1)",
        ),
    ),
    "class-detail/mha-always-bias": _edited(M36, CLASS_BIAS),
    # the wrapper gives its heads d_in and d_out the other way round: Exercise 3.2's arguments are right
    "class-arguments/wrapper-swapped": _edited(
        M36,
        (
            "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
            "CausalAttention(d_out, d_in, context_length, dropout, qkv_bias)",
        ),
    ),
    "class-arguments/wrapper-loop-keywords": _edited(
        M36,
        (
            "self.heads = nn.ModuleList(\n"
            "            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "             for _ in range(num_heads)]\n"
            "        )",
            "self.heads = nn.ModuleList()\n"
            "        for _ in range(num_heads):\n"
            "            head = CausalAttention(\n"
            "                d_in=d_out, d_out=d_in, context_length=context_length,\n"
            "                dropout=dropout, qkv_bias=qkv_bias,\n"
            "            )\n"
            "            self.heads.append(head)",
        ),
    ),
    # the past, the token itself and the next token hidden: at two tokens every entry is hidden, which
    # tells no mistake (triu(-1) hides the same), so the mask is named by what longer sequences show
    "mask-tril-1/buffer": _edited(
        M35,
        (
            "torch.triu(torch.ones(context_length, context_length), diagonal=1)",
            "torch.tril(torch.ones(context_length, context_length), diagonal=1)",
        ),
    ),
    "mask-tril-1/method": _edited(
        M35,
        (
            "torch.triu(torch.ones(context_length, context_length), diagonal=1)",
            "torch.ones(context_length, context_length).tril(1)",
        ),
    ),
    # the merging view's first two arguments swapped, (T, b, d_out): the heads are merged right for a
    # moment (before the view), but what goes on to out_proj is not; the merge is the step that differs
    "merge-view-swapped/contiguous-view": _edited(
        M36,
        (
            "context_vec.contiguous().view(b, num_tokens, self.d_out)",
            "context_vec.contiguous().view(num_tokens, b, self.d_out)",
        ),
    ),
    "merge-view-swapped/einsum-reshape": _edited(
        M36,
        (
            "context_vec = (attn_weights @ values).transpose(1, 2)",
            "context_vec = torch.einsum('bhqk,bhkd->bqhd', attn_weights, values)",
        ),
        ("context_vec.contiguous().view(b, num_tokens, self.d_out)", "context_vec.reshape(num_tokens, b, self.d_out)"),
    ),
    # evidence: NaN in the student's own baseline, and which input case fails
    "baseline-nan/causal-triu-0": _edited(
        M35,
        (
            "torch.triu(torch.ones(context_length, context_length), diagonal=1)",
            "torch.triu(torch.ones(context_length, context_length))",
        ),
    ),
    "baseline-nan/causal-tril-keep": _edited(
        M35,
        (
            "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
            "attn_scores.masked_fill_(~torch.tril(torch.ones(num_tokens, num_tokens), -1).bool(), -torch.inf)",
        ),
    ),
    "cases/renormalize-sum-dim-1": _edited(
        M35, ("masked_simple.sum(dim=-1, keepdim=True)", "masked_simple.sum(dim=1, keepdim=True)")
    ),
    "cases/causal-mask-from-shape-0": _edited(
        M35,
        (
            "mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)  # (T, T), 1 = future",
            "mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)\n"
            "    mask = mask.T if attn_scores.dim() > 2 else mask",
        ),
    ),
    # the weights computed right (scaled, softmax), then the masked scores (-inf above the diagonal)
    # multiplied by the values: NaN and infinity in every output
    "scores-times-values/causal": _edited(
        M35,
        (
            "context_vec = attn_weights @ values  # (b, T, T)",
            "context_vec = attn_scores @ values  # <- the mistake (b, T, T)",
        ),
    ),
    "scores-times-values/mha": _edited(
        M36,
        (
            "context_vec = (attn_weights @ values).transpose(1, 2)",
            "context_vec = (attn_scores @ values).transpose(1, 2)  # <- the mistake",
        ),
    ),
}


def _marked(sources: dict[str, str]) -> dict[str, frozenset[int]]:
    return {
        module: frozenset(i for i, line in enumerate(text.splitlines(), 1) if "# <- the mistake" in line)
        for module, text in sources.items()
        if "# <- the mistake" in text
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    cases = [case for case in benchmark.shape_cases() if case.kind == "stacked-shape" or case.labels == [None]]
    cases += [benchmark.Case(name, "truth", sources, [], _marked(sources)) for name, sources in CASES.items()]
    for name in ("mask-not-sliced", "hardcoded-shape-mha"):
        cases.append(benchmark.Case(f"buggy/{name}", "truth", dict(buggy(name).sources), []))
    return {g.case.name: g for g in benchmark.grade(cases, tmp_path_factory.mktemp("truth"))}


@pytest.fixture(scope="module")
def catalog():
    return Catalog("en")


def _failing(result) -> list[records.TestOutcome]:
    return [o for o in result.outcomes if o.status != "passed"]


def _on_marked_lines(result) -> list[str]:
    """Every failing check of a mutated module whose diagnosis is not on a marked line."""
    misses = []
    for outcome in _failing(result):
        lines = result.case.lines.get(outcome.module)
        where = outcome.diagnosis.location if outcome.diagnosis else None
        if lines is not None and (where is None or where.file != f"{outcome.module}.py" or where.line not in lines):
            misses.append(f"{outcome.id}: {where.file + ':' + str(where.line) if where else 'no line'}")
    return misses


# -- every cause on the path, and nothing else ---------------------------------------------------------


@pytest.mark.parametrize("folder", STACKED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_two_mistakes_on_one_path_are_both_named_and_located(graded, folder):
    result = graded[f"stacked/{folder.parent.name}/{folder.name}"]
    assert result.loses_points
    assert sorted(result.named) == sorted(folder.parent.name.split("+")), result.named
    total, right, misses = benchmark.located(result)
    assert total and right == total, misses


def test_stacked_mistakes_come_in_two_shapes_each():
    shapes: dict[str, int] = {}
    for folder in STACKED:
        shapes[folder.parent.name] = shapes.get(folder.parent.name, 0) + 1
    assert shapes.get("mask-not-applied+uses-scores-not-weights", 0) >= 2, shapes


@pytest.mark.parametrize("name", ["scores-times-values/causal", "scores-times-values/mha"])
def test_weights_computed_right_but_the_scores_used_are_not_said_to_miss_the_scaling(graded, name):
    """The student scales (and normalises) the scores, then multiplies the masked scores, not the
    weights, by the values: nothing is left out, so `missing-scaling` would be false, and so would
    `mask-includes-diagonal` (NaN at the first token, but infinity at the others); with NaN and
    infinity in every output, the values say too little to name the cause on most checks."""
    result = graded[name]
    assert result.loses_points
    assert "missing-scaling" not in result.named, result.named
    traced = [o for o in result.outcomes if o.diagnosis is not None and o.diagnosis.evidence != "variant"]
    assert traced
    assert all(set(o.diagnosis.misconceptions) <= {"uses-scores-not-weights"} for o in traced), result.named


# -- a mistake the catalogue has no name for: nothing named, the first departing line ----------------------


@pytest.mark.parametrize("folder", UNNAMED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_unnamed_mistake_is_located_where_the_values_depart_and_given_no_name(graded, folder):
    result = graded[f"unnamed/{folder.parent.name}/{folder.name}"]
    assert result.loses_points
    assert result.named == [], result.named
    assert _on_marked_lines(result) == []


def test_each_unnamed_mistake_has_two_shapes():
    shapes: dict[str, int] = {}
    for folder in UNNAMED:
        shapes[folder.parent.name] = shapes.get(folder.parent.name, 0) + 1
    assert set(shapes) == {"projection-reused", "extra-layer", "wrong-keyword"}
    assert min(shapes.values()) >= 2, shapes


@pytest.mark.parametrize("shape", ["causal-keys-values-with-w-query", "mha-fused-qkv"])
def test_a_projection_reused_departs_at_the_projection_not_at_the_constructor(graded, shape):
    result = graded[f"unnamed/projection-reused/{shape}"]
    checkpoints = {o.diagnosis.checkpoint for o in _failing(result) if o.diagnosis and not o.blocked_by}
    assert checkpoints and "parameters" not in checkpoints, checkpoints


@pytest.mark.parametrize("shape", ["wrapper-out-proj", "wrapper-loop-proj"])
def test_a_wrapper_with_a_layer_of_its_own_is_not_told_its_heads_are_unregistered(graded, catalog, shape):
    result = graded[f"unnamed/extra-layer/{shape}"]
    registers = next(o for o in result.outcomes if o.id.endswith("test_wrapper_registers_heads"))
    assert registers.status == "failed" and registers.detail.key == "check.mha-wrapper-own-parameters"
    assert "not registered" not in outcome_message(registers, catalog)
    assert "heads-not-registered" not in result.named


@pytest.mark.parametrize("shape", ["causal-bias", "v2-use-bias"])
def test_a_keyword_named_otherwise_is_not_qkv_bias_ignored_and_points_at_the_signature(graded, shape):
    result = graded[f"unnamed/wrong-keyword/{shape}"]
    refused = [o for o in _failing(result) if o.error is not None and "qkv_bias" in o.error.message]
    assert refused
    for outcome in refused:
        assert outcome.misconception is None
        assert outcome.diagnosis.checkpoint == "signature"
        record = diagnosis_record(outcome)
        assert (record["file"], record["line"]) == (f"{outcome.module}.py", min(result.case.lines[outcome.module]))


# -- false sentences ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["object-attribute/v2-parameter", "object-attribute/causal-parameter"])
def test_a_missing_attribute_of_an_nn_module_says_so_and_gives_no_hint_of_the_next_check(graded, catalog, name):
    contract = [o for o in _failing(graded[name]) if o.error is not None and o.error.kind == "contract"]
    assert contract
    for outcome in contract:
        message = str(outcome_message(outcome, catalog))
        assert "nn.Module" in message and "W_query.weight" in message and "Python module" not in message, message
        assert outcome_hint(outcome, catalog) == ""  # e.g. not the gradients check's `.detach()`


@pytest.mark.parametrize("name", ["module-attribute/v1-renamed", "module-attribute/causal-renamed"])
def test_a_missing_attribute_of_a_python_module_says_so(graded, catalog, name):
    contract = [o for o in _failing(graded[name]) if o.error is not None and o.error.key.endswith("module-attribute")]
    assert contract
    for outcome in contract:
        message = str(outcome_message(outcome, catalog))
        assert "Python module" in message and "nn.Module" not in message, message


def test_the_hardcoded_shape_texts_claim_no_literal_numbers(catalog):
    for part in ("title", "explanation", "hint"):
        text = catalog.t(f"misconceptions.hardcoded-shape.{part}")
        assert "literal" not in text and "Look for" not in text, text
    assert "context_length" in catalog.t("misconceptions.hardcoded-shape.hint")


def test_nan_in_the_causality_check_is_not_said_to_come_from_a_fully_masked_row(catalog):
    text = catalog.t("check.mha-nonfinite", positions=[0])
    assert "One way" in text and "was masked entirely" not in text


@pytest.mark.parametrize("name", ["merge-view-swapped/contiguous-view", "merge-view-swapped/einsum-reshape"])
def test_a_merging_view_with_batch_and_tokens_swapped_departs_at_the_merge(graded, name):
    lines = graded[name].case.sources[M36].splitlines()
    view = next(i for i, line in enumerate(lines, 1) if "(num_tokens, b, self.d_out)" in line)
    own = [o for o in _failing(graded[name]) if o.module == M36 and o.diagnosis and o.diagnosis.checkpoint]
    assert own
    for outcome in own:  # not "the output projection", nor "something more after the last step"
        assert outcome.diagnosis.checkpoint == "merged", (outcome.id, outcome.diagnosis.checkpoint)
        assert outcome.diagnosis.location.line == view, (outcome.id, outcome.diagnosis.location)


# -- blame ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["stub/ex3_2", "stub/ex3_3"])
def test_a_stub_exercise_is_not_blocked_by_a_section_that_passes(graded, name):
    result = graded[name]
    module = next(iter(result.case.sources))
    failing = [o for o in _failing(result) if o.module == module]
    assert failing and all(o.blocked_by is None for o in failing)
    assert all(o.status == "passed" for o in result.outcomes if o.module == M36)


@pytest.mark.parametrize("name", ["class-detail/head-dim-float", "class-detail/mha-always-bias"])
def test_a_detail_of_the_class_is_charged_once_not_again_to_the_exercise_that_configures_it(graded, name):
    result = graded[name]
    assert any(o.module == M36 and o.status != "passed" and not o.blocked_by for o in result.outcomes)
    ex33 = [o for o in _failing(result) if o.module == EX33]
    assert ex33 and all(o.blocked_by == M36 and o.misconception is None for o in ex33), [
        (o.id, o.blocked_by, o.misconception) for o in ex33
    ]
    assert "wrong-config" not in result.named


@pytest.mark.parametrize("name", ["mask-tril-1/buffer", "mask-tril-1/method"])
def test_a_mask_that_hides_every_entry_of_a_short_sequence_is_named_by_what_longer_ones_show(graded, name):
    result = graded[name]
    own = [o for o in _failing(result) if o.module == M35]
    assert any(o.misconception == "mask-inverted" for o in own), [(o.id, o.misconception) for o in own]
    assert "mask-includes-diagonal" not in result.named


@pytest.mark.parametrize("name", ["class-arguments/wrapper-swapped", "class-arguments/wrapper-loop-keywords"])
def test_an_exercise_is_not_told_its_configuration_is_wrong_when_the_class_builds_it_wrong(graded, name):
    result = graded[name]
    assert any(o.module == M36 and o.status != "passed" and not o.blocked_by for o in result.outcomes)
    ex32 = [o for o in _failing(result) if o.module == EX32]
    assert ex32 and all(o.blocked_by == M36 and o.misconception is None for o in ex32), [
        (o.id, o.blocked_by, o.misconception) for o in ex32
    ]
    assert "wrong-config" not in result.named


def test_a_test_is_blocked_only_by_a_module_that_fails_tests_of_its_own(graded):
    for result in graded.values():
        own = {o.module for o in result.outcomes if o.status != "passed" and not o.blocked_by}
        blocked = {o.blocked_by for o in result.outcomes if o.blocked_by}
        assert blocked <= own, (result.case.name, blocked, own)


# -- evidence the student can act on -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["baseline-nan/causal-triu-0", "baseline-nan/causal-tril-keep"])
def test_nan_in_the_students_own_baseline_is_never_shown_as_an_expected_value(graded, catalog, name):
    outcome = next(o for o in graded[name].outcomes if o.id.endswith("test_causality"))
    assert outcome.status == "failed" and outcome.detail.key == "mismatch.baseline-nonfinite"
    assert outcome.detail.expected is None
    assert "NaN" in str(outcome_message(outcome, catalog))


@pytest.mark.parametrize(
    ("name", "test", "failing", "passing"),
    [
        ("cases/renormalize-sum-dim-1", "test_mask_and_renormalize", ["on.batched_2x3x4x4"], ["on.softmax_5x5"]),
        (
            "cases/causal-mask-from-shape-0",
            "test_masked_attention_weights",
            ["on.scores_3x5x5_dk4"],
            ["on.book_scores_dk2", "on.scores_5x5_dk6", "on.float64"],
        ),
    ],
)
def test_a_check_of_several_inputs_says_which_fail_and_which_pass(graded, catalog, name, test, failing, passing):
    outcome = next(o for o in graded[name].outcomes if o.id.endswith(test))
    assert outcome.status == "failed"
    assert (outcome.detail.params["failing"], outcome.detail.params["passing"]) == (failing, passing)
    message = str(outcome_message(outcome, catalog))
    assert catalog.t(failing[0]) in message and catalog.t(passing[0]) in message


def _outcome(test_id: str, lost: float, misconception: str | None = None, blocked_by: str | None = None):
    module = test_id.split("::")[0]
    section = {"sec3_3_simple_attention": "3.3", M35: "3.5", M36: "3.6", EX32: "ex3.2"}[module]
    return records.TestOutcome(
        test_id,
        module,
        test_id.split("::")[1],
        section,
        "failed",
        0.0,
        lost,
        misconception=misconception,
        blocked_by=blocked_by,
    )


def test_where_to_go_next_is_the_earliest_failing_check_in_book_order():
    one_point = _outcome("sec3_3_simple_attention::test_softmax_naive", 1)
    mask = [_outcome(f"{M35}::test_{i}", 3, "mask-inverted") for i in range(3)]  # 9 points, one cause
    assert first_to_fix([one_point, *mask]) is one_point  # the book's order, not the most points
    # a check blocked by another module is where to start only when nothing else fails
    blocked = [_outcome(f"{M36}::test_{i}", 2, blocked_by=M35) for i in range(4)]
    single = _outcome(f"{M35}::test_alone", 1)
    assert first_to_fix([*blocked, single]) is single
    assert first_to_fix([*blocked]) is blocked[0]


# -- results.json: the located file and line of every diagnosis ------------------------------------------


@pytest.mark.parametrize("name", ["buggy/mask-not-sliced", "buggy/hardcoded-shape-mha"])
def test_results_json_carries_the_line_of_an_exception_based_diagnosis(graded, name):
    errors = [o for o in _failing(graded[name]) if o.error is not None and o.diagnosis and not o.blocked_by]
    assert errors
    for outcome in errors:
        record = diagnosis_record(outcome)
        assert record["file"] and record["line"], (outcome.id, record)
        assert (record["file"], record["line"]) == (outcome.error.location.file, outcome.error.location.line)
        view = diagnosis_view(outcome, Catalog("en"))
        assert view is None or view.location is None  # the error's own message shows that line


def test_every_diagnosis_with_a_line_writes_it_to_results_json(graded):
    for result in graded.values():
        for outcome in _failing(result):
            if outcome.diagnosis is not None and outcome.diagnosis.location is not None:
                record = diagnosis_record(outcome)
                assert (
                    record["file"] == outcome.diagnosis.location.file
                    and record["line"] == outcome.diagnosis.location.line
                )


# -- heatmaps ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 5, 5), (5, 0)])
def test_a_zero_size_output_never_makes_the_heatmaps_raise(shape):
    from grader.answer_key import AnswerKey
    from grader.suites.hidden_suites import collect

    suites, reference = collect(), AnswerKey().reference()
    probe, key = next(info.heatmap for info in suites.infos if info.heatmap)
    results = dict(reference.results)
    results[probe] = {**reference.outputs(probe), key: torch.zeros(shape)}
    maps = heatmaps(suites.infos, reference, ProbeOutputs(results))
    drawn = next(m for m in maps if m.test_id == next(i.id for i in suites.infos if i.heatmap == (probe, key)))
    assert drawn.actual is None
    heatmap_view(drawn, Catalog("en"))
    heatmap_view(Heatmap("t", "t", [], [[float("nan")]], None), Catalog("en"))  # nothing finite to scale by


def test_modules_of_the_cases_exist():
    assert all(set(sources) <= set(MODULES) for sources in CASES.values())
    assert all(Path(p).is_dir() for p in STACKED + UNNAMED)
