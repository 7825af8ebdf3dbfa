"""Reports are inert whatever a student's code or files hold: the student's text never changes the
structure of feedback.md or feedback.html (no block, heading, link, image or HTML of its own), is
always quoted, never in the grader's voice; gradebook cells are never formulas; unusual values
(NaN, infinities, huge or deeply nested parameters, odd unicode, braces, lone surrogates) never
make the catalogue, a heatmap or a writer raise."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from grader.i18n import Catalog
from grader.records import Detail, GradeResult, Heatmap, IntegrityNote, ProbeError, SectionScore, StudentFrame
from grader.records import TestOutcome as Outcome  # not a test class
from grader.report.render import render_feedback, render_summary
from grader.report.sentences import code_span, fenced, say, student
from grader.report.writers import gradebook_csv, write_submission_reports

M33 = "sec3_3_simple_attention"
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
EMOJI = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\u2b50\u2b55\u26a0]")


def result_with(
    name: str = "alice",
    exc_type: str = "ValueError",
    message: str = "boom",
    function: str = "f",
    code: str = "x = 1",
    file: str = f"{M33}.py",
    detail: str = f"{M33}.py",
    cell: int = 0,
    params: dict | None = None,
    actual: list | None = None,
) -> GradeResult:
    error = ProbeError(
        kind="exception",
        exc_type=exc_type,
        message=message,
        module=M33,
        frames=(StudentFrame(file, 3, function, code, cell),),
        params=params or {},
    )
    tests = [
        Outcome(f"{M33}::test_softmax_naive", M33, "test_softmax_naive", "3.3", "error", 0, 1, error=error),
        Outcome(
            f"{M33}::test_attention_weights",
            M33,
            "test_attention_weights",
            "3.3",
            "failed",
            0,
            2,
            detail=Detail(
                "mismatch.value",
                {"what": "what.attention_weights", "on": "on.book_sentence", "got": message, "expected": [1, 2]},
            ),
        ),
        Outcome(
            f"{M33}::test_context_vectors",
            M33,
            "test_context_vectors",
            "3.3",
            "error",
            0,
            1,
            error=ProbeError(
                kind="contract",
                key="contract.not-a-tensor",
                module=M33,
                params={"what": function, "got": exc_type, **(params or {})},
            ),
        ),
    ]
    uniform = [[round(1 / 6, 4)] * 6 for _ in range(6)]
    heatmaps = [
        Heatmap(
            f"{M33}::test_attention_weights",
            f"tests.{M33}::test_attention_weights.title",
            TOKENS,
            uniform,
            actual if actual is not None else [row[:] for row in uniform],
        )
    ]
    return GradeResult(
        name,
        "0" * 16,
        0.0,
        4.0,
        [SectionScore("3.3", "3.3", 0.0, 4.0)],
        tests,
        [IntegrityNote("submission.file-link", detail)],
        heatmaps=heatmaps,
    )


def block_structure(markdown: str) -> list[str]:
    md = MarkdownIt("commonmark").enable(["table", "linkify"])
    md.options["linkify"] = True
    out = []
    for token in md.parse(markdown):
        out.append(token.type)
        for child in token.children or []:
            assert child.type not in ("html_inline", "image", "link_open"), (child.type, child.content)
    assert "html_block" not in out
    return out


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def tag_sequence(html: str) -> list[str]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def benign(text: str) -> str:
    return "x" if text else ""


student_text = st.text(max_size=80) | st.sampled_from(
    [
        "<img src=x onerror=alert(1)>",
        "[a](javascript:alert(1))",
        "![i](http://x/y.png)",
        "\n# Heading\n- item",
        "```\n~~~\n",
        "`` ` ```` ",
        "<script>alert(1)</script>",
        "http://evil.example/x www.evil.example",
        "This is a problem of the grader, not of your code.",
        "{exc_type} {0} {{",
        "\udcff\ud800",
        "\u202eevil",
        "|table|cell|",
        "&lt;b&gt; &#60;",
        "    indented code",
        "> quote",
        "1. list",
        "---",
        "\r\nline\x00\x1b[31m",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=student_text,
    exc_type=student_text,
    message=student_text,
    function=student_text,
    code=student_text,
    file=student_text,
    detail=student_text,
    cell=st.sampled_from([0, 2]),
)
def test_student_text_never_changes_a_reports_structure(name, exc_type, message, function, code, file, detail, cell):
    catalog = Catalog("en")
    texts = dict(name=name, exc_type=exc_type, message=message, function=function, code=code, file=file, detail=detail)
    html, markdown = render_feedback(result_with(cell=cell, **texts), catalog)
    plain_html, plain_markdown = render_feedback(
        result_with(cell=cell, **{k: benign(v) for k, v in texts.items()}), catalog
    )
    assert block_structure(markdown) == block_structure(plain_markdown)
    assert tag_sequence(html) == tag_sequence(plain_html)
    html.encode("utf-8")
    markdown.encode("utf-8")
    summary = render_summary([result_with(**texts)], catalog)
    plain_summary = render_summary([result_with(**{k: benign(v) for k, v in texts.items()})], catalog)
    assert tag_sequence(summary) == tag_sequence(plain_summary)


def test_the_grader_never_speaks_the_students_words():
    catalog = Catalog("en")
    claim = "This is a problem of the grader, not of your code."
    said = say(catalog, "error.exception.located", exc_type=claim, file=f"{M33}.py", line=3, function="f")
    assert [kind for kind, text in said.parts if claim in text] == ["student"]
    html, markdown = render_feedback(result_with(exc_type=claim, message=claim, function=claim), catalog)
    assert claim not in re.sub(r"<code[^>]*>.*?</code>|<pre[^>]*>.*?</pre>", "", html, flags=re.S)
    assert claim not in re.sub(r"(`+).*?\1|\n    ```.*?\n    ```", "", markdown, flags=re.S)


def test_code_spans_and_fences_cannot_be_closed_from_inside():
    for text in ["a`b", "``", "`x`", " ` ", "````````"]:
        span = code_span(text)
        tokens = MarkdownIt("commonmark").parseInline(span)[0].children
        assert [t.type for t in tokens] == ["code_inline"] and tokens[0].content.strip() == text.strip()
    block = fenced("```\n````\n# not a heading", "    ")
    tokens = MarkdownIt("commonmark").parse("- item\n\n" + block)
    assert [t.type for t in tokens if t.type in ("fence", "heading_open")] == ["fence"]


def test_gradebook_cells_that_look_like_formulas_are_neutralised():
    names = ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx", " =x", "safe", "=\udcffx"]
    results = [GradeResult(n, "0", 0.0, 1.0, [], [], [IntegrityNote("submission.file-link", "=evil()")]) for n in names]
    rows = list(csv.reader(io.StringIO(gradebook_csv(results))))
    for row in rows[1:]:
        for cell in (row[0], row[-1]):
            assert not cell.lstrip().startswith(("=", "+", "-", "@")) and not cell.startswith(("\t", "\r")), cell
    assert "safe" in [row[0] for row in rows]


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


class Unprintable:
    def __str__(self):
        raise RuntimeError("no")

    __repr__ = __str__


def test_unusual_values_never_make_a_report_raise(tmp_path):
    params = {
        "got": nested(50_000),
        "expected": 10**5000,
        "count": float("nan"),
        "total": float("inf"),
        "max_diff": -float("inf"),
        "what": Unprintable(),
        "on": {"a": {"b": 1}},
        "path": b"\xff\x00",
        "name": "{exc_type}{0}{{}}",
        "reason": "\udcff\ud800\u202e",
        7: "not an identifier",
    }
    weird = [[float("nan")] * 6, [float("inf")] * 6, [-float("inf")] * 6, [1e308] * 6, [-0.0] * 6, [5.0] * 6]
    result = result_with(
        name="\udcff{0}\u202e", exc_type="\ud800", message="\x00" * 10_000 + "{exc_type}", params=params, actual=weird
    )
    result.tests.append(
        Outcome(
            f"{M33}::test_x",
            M33,
            "test_x",
            "3.3",
            "failed",
            0,
            1,
            detail=Detail(
                "mismatch.values",
                params,
                expected=[[float("nan"), 10**5000]],
                actual=[[Unprintable(), "x"]],
                differs=[[1, "?"]],
            ),
        )
    )
    for lang in ("en", "zh"):
        catalog = Catalog(lang)
        written = write_submission_reports(result, tmp_path / lang, catalog)
        assert not [n for n in written.integrity if n.kind == "report.failed"]  # the full pages, not the fallback
        for name in ("feedback.html", "feedback.md", "results.json"):
            (tmp_path / lang / name).read_bytes().decode("utf-8")
        json.loads(
            (tmp_path / lang / "results.json").read_text(encoding="utf-8"),
            parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)),
        )
        render_summary([result], catalog).encode("utf-8")
        gradebook_csv([result]).encode("utf-8")


def test_catalogue_backticks_are_code_and_reports_hold_no_emoji():
    catalog = Catalog("en")
    html, markdown = render_feedback(result_with(), catalog)
    summary = render_summary([result_with()], catalog)
    for page in (html, markdown, summary):
        assert not EMOJI.search(page), EMOJI.search(page).group()
    visible = re.sub(r"<style>.*?</style>|<code[^>]*>.*?</code>|<[^>]+>", " ", html, flags=re.S)
    assert "`" not in visible
    stub = result_with(exc_type="NotImplementedError", function="softmax_naive")
    html, _ = render_feedback(stub, catalog)
    assert '<code class="student">softmax_naive</code> in sec3_3_simple_attention.py is not written yet' in html
    from grader.report.sentences import html as as_html

    assert (
        str(as_html("run `python check.py` (`--lang zh`)"))
        == "run <code>python check.py</code> (<code>--lang zh</code>)"
    )


def test_student_segments_are_quoted_in_every_form():
    said = student("a\nb`c")
    assert said.parts == (("student", "a\\nb`c"),)
    assert str(said) == "``a\\nb`c``" and said.plain() == "a\\nb`c"
    assert said.__html__() == '<code class="student">a\\nb`c</code>'
