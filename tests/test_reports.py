"""The reports: feedback.html / feedback.md per submission, summary.html per class, in English and
Simplified Chinese, and the message catalogues behind them."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.diagnosis.catalogue.misconceptions import CATALOGUE
from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog, _load
from grader.records import Detail, GradeResult, Heatmap, IntegrityNote, ProbeError, SectionScore, StudentFrame
from grader.records import TestOutcome as Outcome  # not a test class
from grader.report import sentences as text_module
from grader.report.feedback import feedback_view
from grader.report.render import render_feedback, render_summary
from grader.report.sentences import say, student, trusted, words
from grader.report.summary import class_view, sort_script
from grader.run import grade
from tests.conftest import solutions_as_submission, stubs_as_submission

TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
UNIFORM = [[round(1 / 6, 4)] * 6 for _ in range(6)]
CAUSAL = [[round(1 / (i + 1), 4) if j <= i else 0.0 for j in range(6)] for i in range(6)]
M33 = "sec3_3_simple_attention"
M35 = "sec3_5_causal_attention"
M36 = "sec3_6_multi_head_attention"


def leaf_keys(tree: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in tree.items():
        if isinstance(value, dict):
            keys |= leaf_keys(value, f"{prefix}{key}.")
        else:
            keys.add(prefix + key)
    return keys


def visible_text(html: str) -> str:
    """The text a reader sees (tags, the style sheets and the script removed)."""
    html = re.sub(r"<(style|script)>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def assert_fully_rendered(text: str, lang: str) -> None:
    """No catalogue key and no {parameter} placeholder shows through."""
    placeholders = re.findall(r"\{[a-z_]+\}", text)
    assert not placeholders, placeholders
    leaked = sorted(key for key in leaf_keys(_load(lang)) if key in text)
    assert not leaked, leaked
    for key in (
        "mismatch.",
        "error.",
        "sandbox.",
        "contract.",
        "integrity.",
        "import.",
        "status.",
        "report.",
        "summary.",
        "misconceptions.",
        "what.",
        "on.",
        "check.",
        "tests.",
    ):
        assert not re.search(r"(?<![\w/.-])" + re.escape(key) + r"[a-z]", text), key


def assert_self_contained(html: str) -> None:
    """Nothing from outside; no script but the summary's own sort script, pinned by its page's CSP."""
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    pinned = sort_script()
    html = html.replace(f"<script>{pinned.text}</script>", "", 1)
    assert "<script" not in html.lower()
    assert "<link" not in html.lower()
    assert "url(" not in html and "@import" not in html
    assert "http://" not in html and "https://" not in html


# -- a GradeResult built by hand -----------------------------------------------------------------


def handmade_result() -> GradeResult:
    """Every kind of outcome the templates must draw, without running the grader."""
    values = Detail(
        "mismatch.values",
        {
            "what": "what.attention_weights",
            "on": "on.book_sentence",
            "count": 2,
            "total": 4,
            "max_diff": 0.25,
            "shape": [2, 2],
        },
        expected=[[0.5, 0.5], [0.25, 0.75]],
        actual=[[0.5, 0.75], [0.25, 0.5]],
        differs=[[0.0, 1.0], [0.0, 1.0]],
    )
    stub = ProbeError(
        kind="exception",
        exc_type="NotImplementedError",
        message="write me",
        module=M36,
        frames=(StudentFrame(f"{M36}.py", 42, "forward", 'raise NotImplementedError("write me")'),),
    )
    crash = ProbeError(
        kind="exception",
        exc_type="RuntimeError",
        message="The size of tensor a (5) must match",
        module=M35,
        frames=(StudentFrame(f"{M35}.py", 17, "forward", "attn = attn + mask"),),
    )
    tests = [
        Outcome(f"{M33}::test_softmax_naive", M33, "test_softmax_naive", "3.3", "passed", 1, 1),
        Outcome(
            f"{M33}::test_attention_weights",
            M33,
            "test_attention_weights",
            "3.3",
            "failed",
            0,
            2,
            detail=values,
            misconception="softmax-wrong-dim",
        ),
        Outcome(
            f"{M33}::test_context_vectors",
            M33,
            "test_context_vectors",
            "3.3",
            "failed",
            0,
            2,
            detail=Detail("check.rows-sum-to-one", {"sums": [0.9, 1.1]}),
            misconception="uses-scores-not-weights",
        ),
        Outcome(
            f"{M35}::test_causal",
            M35,
            "test_causal",
            "3.5",
            "error",
            0,
            2,
            error=crash,
            misconception="missing-scaling",
        ),
        Outcome(
            f"{M36}::test_mha_matches_reference", M36, "test_mha_matches_reference", "3.6", "error", 0, 3, error=stub
        ),
        Outcome(f"{M36}::test_wrapper", M36, "test_wrapper", "3.6", "error", 0, 2, error=crash, blocked_by=M35),
        Outcome(
            "exercise3_2_two_dim_output::test_two_dims",
            "exercise3_2_two_dim_output",
            "test_two_dims",
            "ex3.2",
            "error",
            0,
            2,
            error=ProbeError(
                kind="import",
                key="import.missing",
                module="exercise3_2_two_dim_output",
                params={"module": "exercise3_2_two_dim_output"},
            ),
        ),
        Outcome(
            "exercise3_3_gpt2_attention::test_config",
            "exercise3_3_gpt2_attention",
            "test_config",
            "ex3.3",
            "timeout",
            0,
            1,
            error=ProbeError(kind="timeout", key="sandbox.timeout", module="exercise3_3_gpt2_attention"),
        ),
    ]
    sections = [
        SectionScore(
            s, s, sum(t.points for t in tests if t.section == s), sum(t.max_points for t in tests if t.section == s)
        )
        for s in ("3.3", "3.4", "3.5", "3.6", "ex3.1", "ex3.2", "ex3.3")
    ]
    heatmaps = [
        Heatmap(
            f"{M33}::test_attention_weights",
            f"tests.{M33}::test_attention_weights.title",
            TOKENS,
            UNIFORM,
            [row[:] for row in CAUSAL],
        ),
        Heatmap(f"{M35}::test_causal", f"tests.{M35}::test_causal.title", TOKENS, CAUSAL, None),
    ]
    return GradeResult(
        "alice",
        "0" * 16,
        1.0,
        15.0,
        sections,
        tests,
        [IntegrityNote("sandbox.no-bubblewrap", "bwrap"), IntegrityNote("result.rejected", f"{M35}:causal")],
        heatmaps=heatmaps,
    )


@pytest.fixture(scope="module")
def handmade():
    return handmade_result()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_handmade_result_renders_completely(handmade, lang):
    catalog = Catalog(lang)
    html, markdown = render_feedback(handmade, catalog)
    assert_self_contained(html)
    assert_fully_rendered(visible_text(html), lang)
    assert_fully_rendered(markdown, lang)
    assert f'<html lang="{"zh-Hans" if lang == "zh" else "en"}">' in html
    assert "Noto Sans CJK SC" in html


@pytest.mark.parametrize("lang", LANGUAGES)
def test_misconception_cards_show_title_explanation_hint_and_where_to_reread(handmade, lang):
    catalog = Catalog(lang)
    html, markdown = render_feedback(handmade, catalog)
    for mid in ("softmax-wrong-dim", "uses-scores-not-weights", "missing-scaling"):
        title = catalog.t(f"misconceptions.{mid}.title")
        assert title != f"misconceptions.{mid}.title"
        card = html.split(f'id="m-{mid}"', 1)[1].split("</article>", 1)[0]
        assert title in card and catalog.t(f"misconceptions.{mid}.hint") in card
        assert catalog.t("report.card.reread", section=CATALOGUE[mid].book_section) in card
        assert title.replace("_", "\\_") in markdown
    assert html.count('class="card misconception"') == 3


def test_a_failing_comparison_highlights_the_differing_cells(handmade):
    html, markdown = render_feedback(handmade, Catalog("en"))
    block = html.split(f'id="t-{M33}::test_attention_weights"', 1)[1].split('<div class="test"', 1)[0]
    # expected [[0.5, 0.5], [0.25, 0.75]] vs actual [[0.5, 0.75], [0.25, 0.5]]: the second column differs
    assert '<td class="diff">0.7500</td>' in block and '<td class="diff">0.5000</td>' in block
    assert "<td>0.2500</td>" in block  # equal entries are not highlighted
    assert block.count('class="diff"') == 2  # only the student's values are marked, never the expected
    assert "| row 1 | 0.5000 | 0.5000 |" in markdown and "| row 1 | 0.5000 | **0.7500** |" in markdown
    assert "2 of 4 entries" in html


def test_heatmaps_are_inline_svg_grids_with_token_labels_values_and_outlined_differences(handmade):
    view = feedback_view(handmade, Catalog("en"))
    heatmap = view.heatmaps[0]
    assert heatmap.student is not None and heatmap.differing == 30  # causal vs uniform: all but 6 cells
    html, _ = render_feedback(handmade, Catalog("en"))
    block = html.split(f'id="t-{M33}::test_attention_weights"', 1)[1].split('<div class="test"', 1)[0]
    assert block.count("<svg") == 2  # the student's and the reference's grids side by side
    for token in TOKENS:
        assert f">{token}</text>" in block
    assert ">0.17</text>" in block and ">1.00</text>" in block
    assert block.count('class="differs"') == 30


def test_a_heatmap_without_student_weights_says_not_available(handmade):
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        html, markdown = render_feedback(handmade, catalog)
        block = html.split(f'id="t-{M35}::test_causal"', 1)[1].split('<div class="test"', 1)[0]
        assert catalog.t("report.heatmap.not-available") in block and block.count("<svg") == 2
        assert catalog.t("report.heatmap.not-available") in markdown


def test_stubs_get_told_which_function_to_write_first(handmade):
    catalog = Catalog("en")
    view = feedback_view(handmade, catalog)
    sections = {s.id: s for s in view.sections}
    assert "`forward` in sec3_6_multi_head_attention.py (line 42)" in sections["3.6"].start.text
    assert "exercise3_2_two_dim_output.py is missing" in sections["ex3.2"].start.text
    assert sections["3.3"].start is None  # something there works
    html, _ = render_feedback(handmade, catalog)
    assert "NotImplementedError" in html and "write me" in html  # the stub's own message, quoted


def test_errors_show_the_students_file_line_and_code(handmade):
    html, markdown = render_feedback(handmade, Catalog("en"))
    assert 'sec3_5_causal_attention.py, line 17, in <code class="student">forward</code>:' in html
    assert "attn = attn + mask" in html
    assert "`attn = attn + mask`" in markdown


def test_a_test_blocked_by_an_earlier_section_says_so(handmade):
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        html, markdown = render_feedback(handmade, catalog)
        note = say(
            catalog,
            "report.blocked-section",
            own_title=words(catalog.t("sections.3_6")),
            module=trusted(M35),
            section_title=words(catalog.t("sections.3_5")),
            section=trusted("3.5"),
        )
        assert note.__html__() in html and note.markdown() in markdown  # said once for the section
        short = catalog.t("report.blocked-short", section="3.5")
        assert short in html and short in markdown  # and marked on each check it concerns


def test_integrity_notes_come_first_and_prominently(handmade):
    catalog = Catalog("en")
    html, markdown = render_feedback(handmade, catalog)
    notice = html.index('class="notice integrity"')
    assert notice < html.index("Your score by section")
    assert catalog.t("integrity.sandbox.no-bubblewrap") in html
    assert say(catalog, "integrity.result.rejected", detail=f"{M35}:causal").__html__() in html
    assert markdown.index(catalog.t("report.integrity.title")) < markdown.index(catalog.t("report.sections-title"))


def test_a_perfect_result_is_congratulated_and_lists_no_cards():
    catalog = Catalog("en")
    tests = [Outcome(f"{M33}::test_softmax_naive", M33, "test_softmax_naive", "3.3", "passed", 1, 1)]
    result = GradeResult("bob", "1" * 16, 1, 1, [SectionScore("3.3", "3.3", 1, 1)], tests, [])
    html, markdown = render_feedback(result, catalog)
    assert catalog.t("report.all-passed-title") in html and catalog.t("report.all-passed-title") in markdown
    assert "misconception" not in visible_text(html).lower()
    assert 'class="notice integrity"' not in html


# -- the catalogues --------------------------------------------------------------------------------


def test_every_message_exists_in_both_languages():
    """Compared over the merged files of each language: this polices every section's catalogue."""
    english, chinese = leaf_keys(_load("en")), leaf_keys(_load("zh"))
    assert sorted(english - chinese) == [], "missing in zh"
    assert sorted(chinese - english) == [], "missing in en"
    assert {p.name for p in (TEMPLATES_DIR / "i18n" / "en").glob("*.toml")} == {
        p.name for p in (TEMPLATES_DIR / "i18n" / "zh").glob("*.toml")
    }


def _english_words(text: str) -> list[str]:
    """English words in a message, ignoring {parameters}, code in backticks and identifiers."""
    text = re.sub(r"\{\w+\}|`[^`]*`|\w+\([^)]*\)", " ", text)
    return [
        w
        for w in re.findall(r"[A-Za-z][\w.-]*", text)
        if not re.search(r"[_\d.]|[a-z][A-Z]", w) and len(w) >= 4 and w.lower() == w
    ]


def test_the_chinese_catalogue_is_translated_with_the_books_terms():
    en, zh = Catalog("en"), Catalog("zh")
    untranslated = sorted(key for key in leaf_keys(_load("zh")) if zh.t(key) == en.t(key) and _english_words(en.t(key)))
    assert untranslated == []
    text = " ".join(zh.t(key) for key in leaf_keys(_load("zh")))
    for term in (
        "注意力权重",
        "上下文向量",
        "因果注意力",
        "多头注意力",
        "缩放点积注意力",
        "注意力分数",
        "查询",
        "掩码",
    ):
        assert term in text, term


def test_every_placeholder_of_a_message_is_the_same_in_both_languages():
    for key in leaf_keys(_load("en")):
        en_text, zh_text = Catalog("en").t(key), Catalog("zh").t(key)
        assert set(re.findall(r"\{(\w+)\}", _raw("en", key))) == set(re.findall(r"\{(\w+)\}", _raw("zh", key))), key
        assert en_text and zh_text


def _raw(lang: str, key: str) -> str:
    from grader.i18n import _lookup

    value = _lookup(_load(lang), key)
    return value if isinstance(value, str) else ""


@pytest.mark.parametrize("mid", ["softmax-wrong-dim", "uses-scores-not-weights", "missing-scaling", "wrong-scaling"])
@pytest.mark.parametrize("lang", LANGUAGES)
def test_generic_misconceptions_are_explained(mid, lang):
    catalog = Catalog(lang)
    for field in ("title", "explanation", "hint"):
        assert catalog.has(f"misconceptions.{mid}.{field}"), field
    explanation = catalog.t(f"misconceptions.{mid}.explanation")
    sentences = explanation.count("。") + len(re.findall(r"\.(?:\s|$)", explanation))
    assert 2 <= sentences <= 3, explanation


def test_every_misconception_the_diagnosis_can_name_is_explained_in_both_languages():
    missing = [
        f"{lang}: {mid}.{field}"
        for lang in LANGUAGES
        for mid in CATALOGUE
        for field in ("title", "explanation", "hint")
        if not Catalog(lang).has(f"misconceptions.{mid}.{field}")
    ]
    assert missing == []


# -- the class summary -----------------------------------------------------------------------------


def test_class_charts_are_computed_from_the_results(handmade):
    other = handmade_result()
    other = replace(
        other,
        submission="bob",
        score=15.0,
        integrity=[],
        tests=[replace(o, status="passed", points=o.max_points, misconception=None) for o in other.tests],
    )
    view = class_view([handmade, other], Catalog("en"))
    assert [b.value for b in view.histogram.bars] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    rates = {item.title: item.rate for item in view.pass_rates}
    catalog = Catalog("en")
    assert rates[catalog.t(f"tests.{M33}::test_softmax_naive.title")] == 1.0
    assert rates[catalog.t(f"tests.{M33}::test_attention_weights.title")] == 0.5
    assert {item.title: [row.name for row in item.rows] for item in view.misconceptions} == {
        catalog.t(f"misconceptions.{mid}.title"): ["alice"]
        for mid in ("softmax-wrong-dim", "uses-scores-not-weights", "missing-scaling")
    }
    assert view.flagged == 1  # alice's rejected result; a missing sandbox protection is not her doing


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_summary_draws_its_chart_and_flags_integrity(handmade, lang):
    catalog = Catalog(lang)
    other = replace(handmade_result(), submission="bob")
    html = render_summary([handmade, other], catalog)
    assert_self_contained(html)
    assert_fully_rendered(visible_text(html), lang)
    assert html.count('<svg role="img"') == 1  # the score histogram; the rest are tables and lists
    assert html.count('class="chart-bar"') == 10
    assert f"script-src '{sort_script().digest}'" in html
    assert catalog.t("misconceptions.softmax-wrong-dim.title") in html
    assert catalog.t("integrity.result.rejected", detail=f"{M35}:causal")[:40] in html
    assert catalog.t("integrity.sandbox.no-bubblewrap") in html  # once, as a machine-wide warning
    assert ">alice</td>" in html and ">bob</td>" in html


# -- one real grading run --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A small class graded for real: the solutions, the stubs and a softmax over the wrong dimension."""
    base = tmp_path_factory.mktemp("reports")
    klass = base / "class"
    solutions_as_submission(klass / "good")
    stubs_as_submission(klass / "stubs")
    buggy = solutions_as_submission(klass / "buggy")
    source = (buggy / f"{M33}.py").read_text()
    assert "torch.softmax(attention_scores(inputs), dim=-1)" in source
    (buggy / f"{M33}.py").write_text(
        source.replace(
            "torch.softmax(attention_scores(inputs), dim=-1)", "torch.softmax(attention_scores(inputs), dim=0)"
        )
    )
    summary = grade(klass, base / "out", jobs=2, force=True)
    return {r.submission: r for r in summary.results}, base / "out"


def test_a_real_run_writes_complete_reports_in_both_languages(graded):
    results, out = graded
    html = (out / "buggy" / "feedback.html").read_text(encoding="utf-8")
    markdown = (out / "buggy" / "feedback.md").read_text(encoding="utf-8")
    assert_self_contained(html)
    assert_fully_rendered(visible_text(html), "en")
    assert_fully_rendered(markdown, "en")
    assert Catalog("en").t("misconceptions.softmax-wrong-dim.title") in html
    assert 'class="diff"' in html and "<svg" in html and "**" in markdown
    summary = (out / "summary.html").read_text(encoding="utf-8")
    assert_self_contained(summary)
    assert summary.count("<svg") == 1
    for lang in LANGUAGES:  # the same results rendered in each language
        catalog = Catalog(lang)
        for result in results.values():
            html, markdown = render_feedback(result, catalog)
            assert_self_contained(html)
            assert_fully_rendered(visible_text(html), lang)
            assert_fully_rendered(markdown, lang)
        summary = render_summary(list(results.values()), catalog)
        assert_fully_rendered(visible_text(summary), lang)
        assert catalog.t("misconceptions.softmax-wrong-dim.title") in summary


def test_a_real_run_draws_the_wrong_dimension_as_a_heatmap(graded):
    results, _ = graded
    view = feedback_view(results["buggy"], Catalog("en"))
    maps = {h.test_id: h for h in view.heatmaps}
    wrong = maps[f"{M33}::test_attention_weights"]
    assert wrong.student is not None and wrong.differing > 0
    assert wrong.tokens == TOKENS
    assert all(h.differing == 0 for test_id, h in maps.items() if not test_id.startswith(M33))
    good = feedback_view(results["good"], Catalog("en"))
    assert good.heatmaps and all(h.differing == 0 and h.student is not None for h in good.heatmaps)


def test_a_real_run_tells_the_stubs_where_to_start(graded):
    results, out = graded
    view = feedback_view(results["stubs"], Catalog("en"))
    first = view.sections[0]
    assert first.id == "3.3" and first.start is not None
    assert "`attention_scores_for_query` in sec3_3_simple_attention.py" in first.start.text
    assert "NotImplementedError" in first.start.text
    zh = feedback_view(results["stubs"], Catalog("zh")).sections[0].start.text
    assert "attention_scores_for_query" in zh and "尚未编写" not in zh and "先编写" in zh
    html = (out / "stubs" / "feedback.html").read_text(encoding="utf-8")
    assert 'class="notice start"' in html


PARAMETER = st.one_of(
    st.sampled_from([0, 1, -0.0, 0.0, 1.0, True, False, None, float("nan"), float("inf"), "1", "`x`", "a*b", 10**30]),
    st.integers(),
    st.floats(),
    st.text(max_size=300),
    st.lists(st.one_of(st.integers(), st.floats(), st.booleans()), max_size=17).map(tuple),
    st.sampled_from([trusted("3.5"), student("x"), student("`y`"), words("use `torch.tril`")]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(LANGUAGES),
    st.dictionaries(st.sampled_from(["what", "on", "got", "expected"]), PARAMETER, max_size=4),
)
def test_a_sentence_said_again_is_the_sentence_made_anew(lang, params):
    """`say` keeps what it made for plain parameters: what it gives back is what it would make
    now, part for part (a number is not its text, -0.0 is not 0.0, a student's text is not code)."""
    catalog = Catalog(lang)
    for _ in range(2):
        said = say(catalog, "mismatch.shape", **params)
        fresh = text_module._say(catalog, "mismatch.shape", params)
        assert said == fresh and said.parts == fresh.parts


@pytest.mark.parametrize(
    "first, then",
    [
        (0.0, -0.0),
        (1, True),
        (1, 1.0),
        (1, "1"),
        (0, False),
        (None, "None"),
        (student("x"), words("`x`")),
        (student("x"), trusted("x")),
        (float("nan"), "nan"),
        ((1, 2), (1.0, 2)),
    ],
)
def test_a_sentence_is_never_said_with_a_lookalike_parameter(first, then):
    catalog = Catalog("en")
    say(catalog, "mismatch.shape", what="x", got=first)
    said = say(catalog, "mismatch.shape", what="x", got=then)
    fresh = text_module._say(catalog, "mismatch.shape", {"what": "x", "got": then})
    assert said == fresh and said.parts == fresh.parts


def test_a_said_shared_by_reports_cannot_be_changed():
    said = say(Catalog("en"), "mismatch.shape", what="x", got=1)
    with pytest.raises(AttributeError):
        said.parts = (("text", "<b>changed</b>"),)
    with pytest.raises(AttributeError):
        del said.parts
    assert say(Catalog("en"), "mismatch.shape", what="x", got=1).parts == said.parts


def test_kept_renderings_never_mix_up_lookalike_values():
    assert [str(words(v)) for v in (0.0, -0.0, 1.0, True, 1)] == ["0.0", "-0.0", "1.0", "True", "1"]
    huge = [10**4000] * 16  # a forged output's numbers: rendered, never kept as a key
    assert "~1e4000" in say(Catalog("en"), "mismatch.shape", what="x", got=huge)
    assert text_module._signature({"got": huge}) is None and text_module._signature({"got": 10**20}) is None
    assert text_module._signature({"got": "x" * 201}) is None
