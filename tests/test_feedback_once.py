"""Feedback a student can act on in a minute (examples/class and the untouched stubs, both languages):

- one place to start, the same in every channel: a module that does not import first, then the
  earliest failing check of the earliest section in the book's order;
- each thing said once: a module that does not import is one box at the top of its section (its
  line with a caret, Python's message, what that means in plain words) and its checks are listed as
  not run; a cause is explained at the first check it explains, the others refer to it in a line;
- values a student can read: tables labelled by batch item and token, one cell per value, only the
  student's differing values marked, repeated rows noted.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from grader.classroom.deployment import Graded
from grader.classroom.gradescope import to_gradescope
from grader.classroom.nbgrader_feedback import overview_html
from grader.classroom.prairielearn import to_prairielearn
from grader.i18n import LANGUAGES, Catalog
from grader.records import Detail, GradeResult, ProbeError, SectionScore, StudentFrame
from grader.records import TestOutcome as Outcome  # not a test class
from grader.report.broken import gloss_key
from grader.report.feedback import feedback_view
from grader.report.next_step import first_to_fix
from grader.report.render import render_feedback
from grader.report.sentences import markdown_text, words
from grader.report.tables import value_table
from grader.run import grade
from tests.conftest import ROOT, stubs_as_submission

CLASS = ROOT / "examples" / "class"
STUDENTS = sorted(p.name for p in CLASS.iterdir() if p.is_dir())
M33, M34, M35, M36 = (
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
)
EX31 = "exercise3_1_weight_transfer"


@pytest.fixture(scope="module", params=LANGUAGES)
def graded(request, tmp_path_factory) -> tuple[str, dict[str, GradeResult], Path]:
    """examples/class and the untouched stubs (as "stubs"), graded in one language."""
    lang = request.param
    folder = tmp_path_factory.mktemp(f"class-{lang}")
    for student in STUDENTS:
        shutil.copytree(CLASS / student, folder / student)
    stubs_as_submission(folder / "stubs")
    out = tmp_path_factory.mktemp(f"reports-{lang}")
    summary = grade(folder, out, jobs=2, lang=lang, force=True)
    return lang, {r.submission: r for r in summary.results}, out


def _outcome(test_id: str, section: str, status: str = "failed", **fields) -> Outcome:
    module, name = test_id.split("::")
    return Outcome(test_id, module, name, section, status, 0.0 if status != "passed" else 1.0, 1.0, **fields)


def _syntax_error(module: str) -> ProbeError:
    frame = StudentFrame(f"{module}.py", 41, "<module>", "def forward(self, x)")
    return ProbeError("import", "SyntaxError", f"expected ':' ({module}.py, line 41)", module, (frame,))


# -- 37.2 one place to start -----------------------------------------------------------------------------


def test_where_to_start_follows_the_book():
    a34 = _outcome(f"{M34}::test_scaled", "3.4")
    b34 = _outcome(f"{M34}::test_v1", "3.4")
    many36 = [_outcome(f"{M36}::test_{i}", "3.6", misconception="heads-merged-wrong") for i in range(6)]
    assert first_to_fix([*many36, a34, b34]) is a34  # 3.4 before 3.6, however many points 3.6 loses
    ex31 = _outcome(f"{EX31}::test_transfer", "ex3.1")
    in35 = _outcome(f"{M35}::test_causal", "3.5")
    assert first_to_fix([in35, ex31]) is ex31  # Exercise 3.1 ends section 3.4 in the book
    broken = _outcome(f"{M35}::test_mask", "3.5", "error", error=_syntax_error(M35))
    early = _outcome(f"{M33}::test_softmax_naive", "3.3")
    assert first_to_fix([early, a34, broken]) is broken  # a module that does not import comes first
    blocked = [_outcome(f"{M36}::test_{i}", "3.6", blocked_by=M35) for i in range(4)]
    assert first_to_fix([*blocked, in35]) is in35  # its fix is in the module it waits for
    assert first_to_fix(blocked) is blocked[0]  # else the earliest
    assert first_to_fix([a34], skip={a34.id}) is None


def _next_step(result: GradeResult, catalog: Catalog) -> str:
    view = feedback_view(result, catalog)
    assert view.next_step is not None
    return str(view.next_step.text.plain())


def test_every_channel_names_the_same_place_to_start(graded):
    lang, results, out = graded
    catalog = Catalog(lang)
    for name, result in results.items():
        if result.score >= result.max_score:
            continue
        sentence = _next_step(result, catalog)
        markdown = (out / name / "feedback.md").read_text(encoding="utf-8")
        html = (out / name / "feedback.html").read_text(encoding="utf-8")
        assert markdown_text(sentence) in markdown.replace("`", ""), name
        gradescope = to_gradescope(result, catalog)["output"]
        assert markdown_text(sentence) in gradescope.replace("`", ""), name
        prairielearn = to_prairielearn(Graded({}, "", result), catalog)
        assert sentence in prairielearn["message"] + prairielearn.get("output", ""), name
        view = feedback_view(result, catalog)
        assert view.next_step is not None
        assert view.next_step.text.__html__() in overview_html(view, catalog) and view.next_step.text.__html__() in html


def test_the_stubs_start_at_the_first_function_of_3_3(graded):
    lang, results, _ = graded
    catalog = Catalog(lang)
    sentence = _next_step(results["stubs"], catalog)
    title = catalog.t("tests.sec3_3_simple_attention::test_attention_scores_for_query.title")
    assert title in sentence and catalog.t("sections.3_3") in sentence
    view = feedback_view(results["stubs"], catalog)
    box = next(s for s in view.sections if s.id == "3.3").start
    assert box is not None and "attention_scores_for_query" in box.text.plain()


def test_a_syntax_error_is_where_to_start(graded):
    lang, results, _ = graded
    catalog = Catalog(lang)
    sentence = _next_step(results["dave"], catalog)
    assert "sec3_5_causal_attention" in sentence and "41" in sentence
    assert catalog.t("sections.3_5") in sentence


# -- 37.3 each thing said once ---------------------------------------------------------------------------


def _repeated_lines(markdown: str) -> dict[str, int]:
    """Lines of 40 characters or more said more than twice (a table's ruler, |---|---:|, is layout)."""
    lines = Counter(line.strip() for line in markdown.splitlines())
    return {
        line: count
        for line, count in lines.items()
        if count > 2 and len(line) >= 40 and not re.fullmatch(r"[|\-: …]+", line)
    }


def test_no_long_line_is_said_more_than_twice(graded):
    _, results, out = graded
    for name in results:
        markdown = (out / name / "feedback.md").read_text(encoding="utf-8")
        assert _repeated_lines(markdown) == {}, name


def test_carols_feedback_is_short_and_loses_nothing_in_html(graded):
    lang, results, out = graded
    markdown = (out / "carol" / "feedback.md").read_text(encoding="utf-8")
    assert len(markdown.encode("utf-8")) <= 16_000
    html = (out / "carol" / "feedback.html").read_text(encoding="utf-8")
    catalog = Catalog(lang)
    view = feedback_view(results["carol"], catalog)
    for section in view.sections:
        for check in section.tests:
            if check.same_as is not None:  # said in a line; its details one click away
                block = html.split(f'id="t-{check.id}"', 1)[1].split('<div class="test"', 1)[0]
                assert "<details" in block and check.message.__html__() in block


def test_a_module_that_does_not_import_is_one_box(graded):
    lang, results, out = graded
    catalog = Catalog(lang)
    markdown = (out / "dave" / "feedback.md").read_text(encoding="utf-8")
    assert markdown.count("def forward(self, x)") == 1  # the quoted line, once
    assert "def forward(self, x)\n                    ^" in markdown  # Python's caret after it
    html = (out / "dave" / "feedback.html").read_text(encoding="utf-8")
    assert "def forward(self, x)\n                    ^</code>" in html  # under it, in HTML too
    assert markdown.count("expected ':'") == 1  # Python's message, once
    assert words(catalog.t("python-errors.gloss.expected-colon")).markdown() in markdown
    not_run = catalog.t("python-errors.not-run-status")
    assert markdown.count(f"— {not_run} (") >= 12  # its checks, listed as not run
    assert catalog.t("report.heatmap.not-available") not in markdown  # no empty heatmaps beside them


@pytest.mark.parametrize(
    "exc_type, message, key",
    [
        ("SyntaxError", "expected ':'", "expected-colon"),
        ("SyntaxError", "invalid syntax. Perhaps you forgot a comma?", "forgot-comma"),
        ("SyntaxError", "'(' was never closed", "never-closed"),
        ("IndentationError", "unexpected indent", "unexpected-indent"),
        ("IndentationError", "expected an indented block after function definition on line 3", "expected-indent"),
        ("NameError", "name 'torhc' is not defined", "name-not-defined"),
        ("ImportError", "cannot import name 'CausalAttention' from 'sec3_5_causal_attention'", "cannot-import-name"),
        ("ModuleNotFoundError", "No module named 'numpyy'", "no-module"),
        ("RuntimeError", "anything else", "other"),
    ],
)
def test_pythons_common_messages_are_glossed_in_both_languages(exc_type, message, key):
    assert gloss_key(exc_type, message) == key
    for lang in LANGUAGES:
        assert Catalog(lang).has(f"python-errors.gloss.{key}")


# -- 37.4 values a student can read ----------------------------------------------------------------------


def _table_result() -> GradeResult:
    expected = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    actual = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    differs = [[False] * 3, [True] * 3, [True] * 3]
    detail = Detail(
        "mismatch.values",
        {"what": "x", "on": "", "count": 6, "total": 54, "max_diff": 6.0, "shape": [2, 3, 9]},
        expected,
        actual,
        differs,
    )
    test = _outcome(f"{M35}::test_causal", "3.5", detail=detail)
    return GradeResult("amy", "0" * 16, 0, 1, [SectionScore("3.5", "3.5", 0, 1)], [test], [])


def test_a_3d_table_is_labelled_by_batch_item_and_token_and_marks_only_the_students_values():
    result = _table_result()
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        table = value_table(result.tests[0], catalog)
        assert table is not None and table.rows == [catalog.t("report.table.token", n=i) for i in (1, 2, 3)]
        assert table.caption.plain() == catalog.t("report.table.batch-item", count=2, tokens=3, values=9)
        assert not any(c.differs for row in table.expected for c in row)  # never the expected table
        assert [c.differs for c in table.actual[1]] == [True] * 3
        assert [n.plain() for n in table.repeated or []] == [catalog.t("report.table.repeated", first=2, last=3, row=1)]
        _, markdown = render_feedback(result, catalog)
        assert (
            f"| {markdown_text(catalog.t('report.table.token', n=2))} | **1.0000** | **2.0000** | **3.0000** | … |"
            in markdown
        )


def test_gradescope_puts_one_value_in_a_cell_and_prairielearn_aligns_its_columns():
    result = _table_result()
    catalog = Catalog("en")
    output = to_gradescope(result, catalog)["tests"][0]["output"]
    assert "| token 1 | 1.0000 | 2.0000 | 3.0000 | … |" in output
    assert "| token 2 | **1.0000** | **2.0000** | **3.0000** | … |" in output
    body = to_prairielearn(Graded({}, "", result), catalog)["tests"][0]["output"]
    rows = [line for line in body.splitlines() if line.strip().startswith("token ")]
    assert len(rows) == 6
    ends = {len(line.rstrip(" …")) for line in rows}
    assert len(ends) == 1  # every row's last column ends at one place
