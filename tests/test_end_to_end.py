"""The whole grading path, as instructors use it: stubs, the solutions and the example class."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from grader.run import grade
from tests.conftest import ROOT, solutions_as_submission, stubs_as_submission


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """One grading run over the example class plus the stubs and the solutions as students."""
    base = tmp_path_factory.mktemp("e2e")
    klass = shutil.copytree(ROOT / "examples" / "class", base / "class")
    stubs_as_submission(klass / "stubs")
    solutions_as_submission(klass / "solutions")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}, base / "reports"


def failing(result) -> dict[str, tuple[str, str | None]]:
    return {t.id: (t.status, t.misconception) for t in result.tests if t.status != "passed"}


def test_the_solutions_earn_full_marks_through_the_student_path(graded_class):
    results, _ = graded_class
    solution = results["solutions"]
    assert solution.max_score > 0
    assert solution.score == solution.max_score, failing(solution)
    assert all(t.misconception is None for t in solution.tests)


def test_the_stubs_score_zero_and_say_where_to_start(graded_class):
    results, _ = graded_class
    stubs = results["stubs"]
    assert stubs.score == 0
    assert {t.status for t in stubs.tests} == {"error"}
    first = stubs.tests[0]
    assert first.module == "sec3_3_simple_attention"
    assert first.error is not None and first.error.exc_type == "NotImplementedError"
    assert first.error.location is not None and first.error.location.file == "sec3_3_simple_attention.py"


def test_every_section_has_points(graded_class):
    results, _ = graded_class
    assert all(section.max_score > 0 for section in results["solutions"].sections)


def test_results_json_follows_the_contract(graded_class):
    results, reports = graded_class
    document = json.loads((reports / "bob" / "results.json").read_text())
    assert set(document) >= {"submission", "score", "max_score", "sections", "tests", "integrity"}
    assert [s["id"] for s in document["sections"]] == ["3.3", "3.4", "3.5", "3.6", "ex3.1", "ex3.2", "ex3.3"]
    for test in document["tests"]:
        assert set(test) >= {"id", "section", "points", "max_points", "status", "message", "misconception"}
        assert test["status"] in {"passed", "failed", "error", "timeout", "resource", "skipped"}
        module, _, name = test["id"].partition("::")
        assert module and name.startswith("test_")
    for name in ("feedback.html", "feedback.md"):
        assert (reports / "bob" / name).stat().st_size > 0
    assert (
        (reports / "gradebook.csv")
        .read_text()
        .splitlines()[0]
        .startswith("student,3.3,3.4,3.5,3.6,ex3.1,ex3.2,ex3.3,total")
    )


def test_cli_grades_one_submission_and_prints_the_report_path(tmp_path):
    submission = solutions_as_submission(tmp_path / "me")
    run = subprocess.run(
        [sys.executable, "-m", "grader", str(submission), "--out", str(tmp_path / "out"), "--quiet", "--jobs", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert str(tmp_path / "out" / "feedback.html") in run.stdout
    assert json.loads((tmp_path / "out" / "results.json").read_text())["submission"] == "me"


def test_cli_refuses_a_missing_path_with_a_clear_error(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "grader", str(tmp_path / "nowhere"), "--quiet"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 2
    assert "does not exist" in run.stderr


# What each example student's mistakes should cost: (failing test ids -> misconception or blocking module).
# Any test not listed must pass.
EXAMPLE_FAILURES = {
    "alice": {},
    "bob": {
        "sec3_3_simple_attention::test_softmax_naive": "softmax-wrong-dim",
        "sec3_4_self_attention::test_scaled_attention_weights": "missing-scaling",
        "sec3_4_self_attention::test_self_attention_v1_book_seed": "missing-scaling",
        "sec3_4_self_attention::test_self_attention_v1_matches_reference": "missing-scaling",
        "sec3_4_self_attention::test_self_attention_v2_matches_reference": "missing-scaling",
        "sec3_4_self_attention::test_self_attention_v2_qkv_bias": "missing-scaling",
    },
    "frank": {
        "sec3_6_multi_head_attention::test_mha_matches_reference": "out-proj-missing",
        "sec3_6_multi_head_attention::test_mha_float64_and_mask_buffer": "out-proj-missing",
        "sec3_6_multi_head_attention::test_mha_qkv_bias": "out-proj-missing",
        "sec3_6_multi_head_attention::test_mha_gradients": "out-proj-missing",
        "sec3_6_multi_head_attention::test_mha_book_seeded_output": "out-proj-missing",
        "exercise3_1_weight_transfer::test_v1_matches_v2_square": "weights-not-transposed",
        "exercise3_1_weight_transfer::test_v1_matches_v2_book_sizes": "weights-not-transposed",
    },
}


def _explained(outcome) -> str | None:
    if outcome.misconception:
        return outcome.misconception
    return f"blocked:{outcome.blocked_by}" if outcome.blocked_by else None


@pytest.mark.parametrize("student", sorted(EXAMPLE_FAILURES))
def test_example_students_lose_exactly_what_their_mistakes_deserve(graded_class, student):
    results, _ = graded_class
    got = {t.id: _explained(t) for t in results[student].tests if t.status != "passed"}
    assert got == EXAMPLE_FAILURES[student]


def test_carol_mask_on_the_diagonal_and_unmerged_heads(graded_class):
    results, _ = graded_class
    carol = {t.id: t for t in results["carol"].tests}
    failing_3_5 = [t for t in carol.values() if t.section == "3.5" and t.status != "passed"]
    assert failing_3_5 and all(t.misconception == "mask-includes-diagonal" for t in failing_3_5)
    assert carol["sec3_5_causal_attention::test_simple_causal_mask"].status == "passed"
    assert carol["sec3_6_multi_head_attention::test_mha_matches_reference"].misconception == "heads-merged-wrong"
    # the wrapper puts side by side what her own heads give (NaN in the first row): 3.5 pays for the mask
    wrapper = [t for t in carol.values() if t.id.startswith("sec3_6_multi_head_attention::test_wrapper")]
    assert wrapper and all(t.status == "passed" for t in wrapper)
    assert all(t.status == "passed" for t in carol.values() if t.section in ("ex3.2", "ex3.3"))
    assert all(t.status == "passed" for t in carol.values() if t.section in ("3.3", "3.4", "ex3.1"))


def test_dave_syntax_error_costs_only_what_needs_that_file(graded_class):
    """sec3_6 imports CausalAttention from his broken sec3_5 at its top: it still imports, and only
    the checks that use CausalAttention (the wrapper, Exercise 3.2) fail, naming 3.5's line."""
    results, _ = graded_class
    dave = results["dave"]
    assert dave.score == 40
    for test in dave.tests:
        if test.section == "3.5":
            assert test.status == "error"
            assert test.error.exc_type == "SyntaxError" and test.error.location.file == "sec3_5_causal_attention.py"
            assert test.error.location.line == 41
        elif test.name.startswith("test_wrapper") or test.section == "ex3.2":  # they use CausalAttention
            assert test.status == "error" and test.blocked_by == "sec3_5_causal_attention"
            assert test.error.key == "import.stand-in-located" and test.error.location.line == 41
            assert "`CausalAttention` from sec3_5_causal_attention" in test.message and "line 41" in test.message
        else:
            assert test.status == "passed", test.id


def test_the_example_class_readme_says_where_daves_feedback_points_and_what_cannot_pass(graded_class):
    """examples/class/README.md names the file and line of dave's syntax error, as his feedback
    does (quoting the line), and the checks it says cannot pass do not."""
    results, reports = graded_class
    readme = (ROOT / "examples" / "class" / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| dave |"))
    error = next(t.error for t in results["dave"].tests if t.section == "3.5")
    assert (error.exc_type, error.location.file) == ("SyntaxError", "sec3_5_causal_attention.py")
    assert f"`{error.location.file}`, line {error.location.line}" in row
    quoted = re.search(r"\(`([^`]+)`\)", row).group(1)
    feedback = (reports / "dave" / "feedback.md").read_text()
    assert quoted in feedback and "SyntaxError" in feedback
    assert "3.6 wrapper" in row and "Exercise 3.2" in row
    cannot_pass = [t for t in results["dave"].tests if "wrapper" in t.id or t.section == "ex3.2"]
    assert cannot_pass and all(t.status != "passed" for t in cannot_pass)


def test_erin_unfinished_sections_score_zero_and_finished_ones_full(graded_class):
    results, _ = graded_class
    sections = {s.id: s for s in results["erin"].sections}
    assert sections["3.3"].score == sections["3.3"].max_score
    assert sections["3.4"].score == sections["3.4"].max_score
    for section in ("3.5", "3.6", "ex3.1", "ex3.2", "ex3.3"):
        assert sections[section].score == 0
    assert all(t.error.exc_type == "NotImplementedError" for t in results["erin"].tests if t.status != "passed")


def test_the_sandbox_starts_before_the_grader_imports_torch():
    """The run and the sandbox pool import no torch, so the workers' start-up (each imports torch)
    overlaps the grader's own import of it and of the suites."""
    code = (
        "import sys; import grader.run, grader.sandbox.pool; "
        "print(sorted(m for m in ('torch', 'pytest', 'jinja2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
