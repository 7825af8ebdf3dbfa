"""What the student reads about a diagnosed failure, and three defects of the feedback fixed here:
- blame is decided from where the cause is: an exercise that passes its own wrong arguments to a
  working module of 3.6 is its own wrong-config, not "needs your sec3_6...py";
- NaN outputs (a fully masked row) are called NaN, not "the future is not hidden";
- a failing check's hint is its cause's, not the check's own (a mask bug in MHA does not get
  "pass bias=qkv_bias");
- the report shows the located line with its code, the checkpoint it missed and the cause, in
  English and Chinese.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from grader.i18n import Catalog
from grader.records import SECTIONS, GradeResult, SectionScore
from grader.report.render import render_feedback
from grader.report.sentences import html as as_html
from grader.report.sentences import markdown as md
from grader.run import grade
from tests.conftest import ROOT, solutions_as_submission

SHAPES = ROOT / "tests" / "submissions" / "shapes"
MHA = "sec3_6_multi_head_attention::"
EX3 = "exercise3_3_gpt2_attention::"
EX2 = "exercise3_2_two_dim_output::"


def _student(root: Path, name: str, folder: Path) -> Path:
    target = solutions_as_submission(root / name)
    for file in folder.glob("*.py"):
        shutil.copy(file, target / file.name)
    return target


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Graded for real (sandbox): the feedback as students get it today."""
    base = tmp_path_factory.mktemp("feedback")
    klass = base / "class"
    _student(klass, "d_out-64", SHAPES / "wrong-config" / "ex3_3-d_out-64")
    _student(klass, "output-as-d_in", SHAPES / "wrong-config" / "ex3_2-output-as-d_in")
    _student(klass, "diagonal-mha", SHAPES / "mask-includes-diagonal" / "mha-triu0")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}, base / "reports"


def _tests(result):
    return {t.id: t for t in result.tests}


def test_an_exercise_passing_its_own_wrong_sizes_is_blamed_not_3_6(graded):
    results, _ = graded
    for name, test_id in (
        ("d_out-64", EX3 + "test_configuration"),
        ("output-as-d_in", EX2 + "test_two_heads_two_dimensional_output"),
    ):
        outcome = _tests(results[name])[test_id]
        assert outcome.status == "error"
        assert outcome.blocked_by is None, outcome.message
        assert outcome.misconception == "wrong-config"
        assert "sec3_6_multi_head_attention.py" not in outcome.message or "exercise3" in outcome.message
        assert "needs your" not in outcome.message
    message = _tests(results["d_out-64"])[EX3 + "test_configuration"].message
    assert "exercise3_3_gpt2_attention.py" in message  # the line that passed d_out=64
    # the module of 3.6 itself works: its own checks pass
    assert all(t.status == "passed" for t in results["d_out-64"].tests if t.module == "sec3_6_multi_head_attention")


def test_nan_from_a_fully_masked_row_is_called_nan(graded):
    results, _ = graded
    outcome = _tests(results["diagonal-mha"])[MHA + "test_mha_causal"]
    assert outcome.status == "failed"
    assert "NaN" in outcome.message and "future is not hidden" not in outcome.message
    assert outcome.misconception == "mask-includes-diagonal"


def test_a_check_shows_the_hint_of_its_cause(graded):
    results, reports = graded
    outcome = _tests(results["diagonal-mha"])[MHA + "test_mha_qkv_bias"]
    assert outcome.status == "failed" and outcome.misconception == "mask-includes-diagonal"
    for lang in ("en", "zh"):
        catalog = Catalog(lang)
        html, markdown = render_feedback(results["diagonal-mha"], catalog)
        own = catalog.t(f"tests.{MHA}test_mha_qkv_bias.hint")
        cause = catalog.t("misconceptions.mask-includes-diagonal.hint")
        assert str(as_html(own)) not in html and md(own) not in markdown
        assert str(as_html(cause)) in html and md(cause) in markdown


def _traced_result(tmp_path: Path, folder: Path) -> GradeResult:
    import diagnosis as benchmark

    case = benchmark.Case(folder.name, "shape", {p.stem: p.read_text() for p in folder.glob("*.py")}, [])
    (graded,) = benchmark.grade([case], tmp_path)
    outcomes = graded.outcomes
    sections = [
        SectionScore(
            s,
            s,
            sum(o.points for o in outcomes if o.section == s),
            sum(o.max_points for o in outcomes if o.section == s),
        )
        for s in SECTIONS
    ]
    return GradeResult(
        folder.name, "", sum(o.points for o in outcomes), sum(o.max_points for o in outcomes), sections, outcomes, []
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_shows_the_line_its_code_the_checkpoint_and_the_cause(tmp_path, lang):
    folder = SHAPES / "wrong-scaling" / "sqrt-tokens-causal"
    result = _traced_result(tmp_path, folder)
    outcome = next(
        t for t in result.tests if t.id == "sec3_5_causal_attention::test_causal_attention_matches_reference"
    )
    diagnosis = outcome.diagnosis
    assert diagnosis.misconceptions == ("wrong-scaling",) and diagnosis.checkpoint == "scaled"
    marked = [
        i
        for i, line in enumerate((folder / "sec3_5_causal_attention.py").read_text().splitlines(), 1)
        if "<- the mistake" in line
    ]
    assert (diagnosis.location.file, diagnosis.location.line) == ("sec3_5_causal_attention.py", marked[0])
    catalog = Catalog(lang)
    html, markdown = render_feedback(result, catalog)
    checkpoint = catalog.t("diagnosis.checkpoints.scaled")
    for expected in (
        catalog.t("diagnosis.checkpoint-label"),
        checkpoint,
        "math.sqrt(t)",  # their own code
        catalog.t("misconceptions.wrong-scaling.title"),
        catalog.t("misconceptions.wrong-scaling.hint"),
    ):
        assert str(as_html(expected)) in html, expected
        assert md(expected) in markdown or expected in markdown, expected
    assert f"sec3_5_causal_attention.py, line {marked[0]}" in html if lang == "en" else str(marked[0]) in html


def test_two_mistakes_are_both_shown_and_recorded(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    source = (ROOT / "solutions" / "sec3_5_causal_attention.py").read_text()
    source = source.replace(
        "torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)", "torch.softmax(attn_scores, dim=1)"
    )
    assert "dim=1)" in source
    (folder / "sec3_5_causal_attention.py").write_text(source)
    result = _traced_result(tmp_path / "graded", folder)
    outcome = next(
        t for t in result.tests if t.id == "sec3_5_causal_attention::test_causal_attention_matches_reference"
    )
    assert set(outcome.diagnosis.misconceptions) == {"missing-scaling", "softmax-wrong-dim"}
    catalog = Catalog("en")
    html, _ = render_feedback(result, catalog)
    assert catalog.t("diagnosis.causes-many", count=2) in html
    from grader.report.results_file import results_document

    record = next(t for t in results_document(result, catalog)["tests"] if t["id"] == outcome.id)
    assert set(record["diagnosis"]["misconceptions"]) == {"missing-scaling", "softmax-wrong-dim"}
    assert record["diagnosis"]["file"] == "sec3_5_causal_attention.py" and record["diagnosis"]["line"] > 0
    json.dumps(record)
    assert not re.search(r"diagnosis\.(checkpoints|hints)\.", html)
