"""One feedback, every channel: what students read on Gradescope, PrairieLearn and in nbgrader's
feedback carries the whole diagnosis that feedback.html shows, in English and in Chinese.

The student is examples/class/carol: two mistakes in two sections (the causal mask also hides the
diagonal, 3.5; the heads merged without transposing back, 3.6). For the first failing check of each
section, each channel must show the misconception and its hint, the student's file (or notebook
cell) and line with the code, and the expected and actual values; channels that show pictures show
the attention weights. Test names and numbers are the book's sections and the checks' titles,
never the kit's internal ids.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pytest

from grader.classroom.deployment import Graded
from grader.classroom.gradescope import to_gradescope
from grader.classroom.prairielearn import to_prairielearn
from grader.i18n import LANGUAGES, Catalog
from grader.records import SECTIONS, GradeResult
from grader.report.sentences import markdown_text
from grader.run import grade
from tests.conftest import ROOT

CAROL = ROOT / "examples" / "class" / "carol"
# section -> (module, the misconception, the student's line of code the diagnosis names)
MISTAKES = {
    "3.5": (
        "sec3_5_causal_attention",
        "mask-includes-diagonal",
        '"mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)',
    ),
    "3.6": (
        "sec3_6_multi_head_attention",
        "heads-merged-wrong",
        "context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)",
    ),
}
WHERE = {"en": "{file}, line {line}", "zh": "{file} 第 {line} 行"}


@pytest.fixture(scope="module", params=LANGUAGES)
def carol(request, tmp_path_factory) -> tuple[str, GradeResult]:
    lang = request.param
    summary = grade(CAROL, tmp_path_factory.mktemp(f"carol-{lang}"), jobs=1, lang=lang, force=True)
    return lang, summary.results[0]


def line_of(module: str, code: str) -> int:
    lines = (CAROL / f"{module}.py").read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, start=1) if text.strip() == code)


def first_failing(result: GradeResult, section: str):
    """The first check of the section that fails for its own mistake (not blocked by another
    section), and the number its table shows first."""
    module, misconception, _ = MISTAKES[section]
    outcome = next(
        o
        for o in result.tests
        if o.module == module and o.status == "failed" and not o.blocked_by and o.detail is not None
    )
    assert outcome.diagnosis is not None and outcome.diagnosis.location is not None, outcome.id
    first = outcome.detail.expected
    while isinstance(first, list):
        first = first[0]
    return outcome, f"{first:.4f}"


def test_the_student_has_two_mistakes_in_two_sections(carol):
    _, result = carol
    for section, (module, misconception, code) in MISTAKES.items():
        outcome, _ = first_failing(result, section)
        assert outcome.diagnosis.misconceptions[0] == misconception
        assert (outcome.diagnosis.location.file, outcome.diagnosis.location.line) == (
            f"{module}.py",
            line_of(module, code),
        )


# -- Gradescope ---------------------------------------------------------------------------------------


def test_gradescope_tests_carry_the_whole_diagnosis_under_readable_names(carol):
    lang, result = carol
    catalog = Catalog(lang)
    results = to_gradescope(result, catalog)
    assert "::" not in json.dumps(results, ensure_ascii=False)  # no internal id anywhere
    titles = {o.id: catalog.t(f"tests.{o.id}.title") for o in result.tests}
    numbers = {
        s: s if s[0].isdigit() else catalog.t("classroom.section-label.exercise", number=s[2:]) for s in SECTIONS
    }
    assert [(t["number"], t["name"]) for t in results["tests"]] == [
        (numbers[o.section], titles[o.id]) for o in result.tests
    ]
    assert numbers["ex3.1"] in ("Ex. 3.1", "练习 3.1")
    for section, (module, misconception, code) in MISTAKES.items():
        outcome, value = first_failing(result, section)
        test = next(t for t in results["tests"] if t["name"] == titles[outcome.id])
        output = test["output"]
        where = WHERE[lang].format(file=markdown_text(f"{module}.py"), line=line_of(module, code))
        assert where in output, output
        assert f"```\n{code}\n```" in output  # the student's line, as a code block
        assert markdown_text(catalog.t(f"misconceptions.{misconception}.title")) in output
        assert markdown_text(catalog.t(f"misconceptions.{misconception}.hint")) in output
        assert f"| {markdown_text(catalog.t('report.table.expected'))} |" in output and value in output
    causal = next(t for t in results["tests"] if t["status"] == "failed" and t["number"] == "3.5")
    assert markdown_text(catalog.t("report.heatmap.yours")) in causal["output"]  # the weights, as a table
    # the top-level output is the summary, not every check again
    assert markdown_text(catalog.t("report.next-step-title")) in results["output"]
    assert code not in results["output"] and len(results["output"]) < 6000


# -- PrairieLearn -------------------------------------------------------------------------------------


def test_prairielearn_tests_carry_the_whole_diagnosis_and_the_message_is_in_blocks(carol):
    lang, result = carol
    catalog = Catalog(lang)
    results = to_prairielearn(Graded({}, "", result, []), catalog)
    for section, (module, misconception, code) in MISTAKES.items():
        outcome, value = first_failing(result, section)
        test = next(t for t in results["tests"] if t["name"].endswith(catalog.t(f"tests.{outcome.id}.title")))
        output = test["output"]
        assert WHERE[lang].format(file=f"{module}.py", line=line_of(module, code)) in output
        assert f"\n    {code}\n" in output
        assert catalog.t(f"misconceptions.{misconception}.title") in output
        assert catalog.t(f"misconceptions.{misconception}.hint") in output
        assert catalog.t("report.table.expected") in output and value in output
        assert test["message"] and test["message"] not in output  # the sentence, then the detail
    pictures = [i for t in results["tests"] for i in t.get("images", [])]
    assert pictures and base64.b64decode(pictures[0]["url"].split(",", 1)[1]).startswith(b"<svg")
    # every heading of the top-level message stands on a line of its own, its text below
    message = results["message"]
    for heading in ("report.next-step-title",):
        assert f"\n{catalog.t(heading)}\n" in message, message
    blocks = message.split("\n\n")
    assert len(blocks) >= 3 and all(block.strip() for block in blocks)


# -- nbgrader -----------------------------------------------------------------------------------------


def _carol_notebook(course: Path) -> tuple[dict, dict[str, int]]:
    """The course's notebook with carol's code in its solution cells, and each module's code cell
    number as Jupyter users count cells (among the code cells)."""
    notebook = json.loads(next((course / "source").rglob("*.ipynb")).read_text(encoding="utf-8"))
    numbers, count = {}, 0
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        count += 1
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            module = meta["grade_id"]
            code = (CAROL / f"{module}.py").read_text(encoding="utf-8")
            code = re.sub(r"^from (sec3_\w+|exercise3_\w+) import .*$\n?", "", code, flags=re.M)
            cell["source"] = f"# module: {module}\n{code}"
            numbers[module] = count
    return notebook, numbers


def test_nbgrader_feedback_carries_the_whole_diagnosis_under_each_test_cell(carol, tmp_path):
    pytest.importorskip("nbgrader")
    import nbformat
    from nbconvert import HTMLExporter

    from grader.classroom.nbgrader_autograde import GradeWithKit
    from grader.classroom.nbgrader_course import create_course

    lang, _ = carol
    catalog = Catalog(lang)
    create_course(tmp_path / "course", lang=lang)
    document, numbers = _carol_notebook(tmp_path / "course")
    nb = nbformat.from_dict(document)
    nb, _ = GradeWithKit(lang=lang).preprocess(nb, {"nbgrader": {"notebook": "ch3_attention"}})
    overview = nb.cells[1]
    assert overview.cell_type == "markdown" and "\n\n" not in overview.source  # one HTML block
    assert catalog.t("report.next-step-title") in overview.source
    page, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    assert catalog.t("report.next-step-title") in page and "&lt;div" not in page  # shown as HTML, not as text
    for module, misconception, code in MISTAKES.values():
        fragment = _test_cell(nb, f"test_{module}").outputs[0]["data"]["text/html"]
        lines = _test_cell(nb, module).source.splitlines()  # the student's cell (as graded)
        line = next(number for number, text in enumerate(lines, start=1) if text.strip() == code)
        where = catalog.t("report.in-cell", notebook="\0", cell=numbers[module])
        where = re.escape(where).replace("\x00", r"<code[^>]*>ch3_attention\.ipynb</code>")
        assert re.search(where, fragment), fragment  # "code cell N": markdown cells are not counted
        assert _test_cell(nb, module).execution_count == numbers[module]  # its prompt: "In [N]:"
        assert (f", line {line}," if lang == "en" else f" 第 {line} 行") in fragment
        shown = html.unescape(fragment)  # jinja2 writes a quote as &#34;, html.escape as &quot;
        assert re.search(rf'<code class="ak-code">\s*{re.escape(code)}\s*</code>', shown)  # the line, as code
        assert catalog.t(f"misconceptions.{misconception}.hint") in shown
        assert catalog.t("report.table.expected") in fragment and "<table" in fragment
    causal = _test_cell(nb, "test_sec3_5_causal_attention")
    assert "<svg" in causal.outputs[0]["data"]["text/html"]  # the attention weights, drawn


def _test_cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_nbgrader_feedback_prompts_number_the_code_cells_as_the_report_does():
    """nbgrader's feedback page shows each code cell's prompt ("In [2]:"): it is the number the
    report gives the cell ("code cell 2", markdown cells not counted), not what a kernel left."""
    pytest.importorskip("nbgrader")
    import nbformat
    from nbconvert import HTMLExporter

    from grader.classroom.nbgrader_feedback import number_code_cells
    from grader.intake.notebooks import _numbered_code_cells

    cells = [
        nbformat.v4.new_markdown_cell("# 第 3 章"),
        nbformat.v4.new_code_cell("import torch", execution_count=7),
        nbformat.v4.new_markdown_cell("## 3.3"),
        nbformat.v4.new_code_cell(""),
        nbformat.v4.new_code_cell("def softmax_naive(x):\n    return x", execution_count=2),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    number_code_cells(nb)
    report = [number for number, _ in _numbered_code_cells(json.loads(nbformat.writes(nb)))]
    assert [c.execution_count for c in nb.cells if c.cell_type == "code"] == report
    page, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    prompts = [int(n) for n in re.findall(r"In(?:&nbsp;|\xa0| )\[(\d+)\]:", page)]
    assert prompts == [1, 2, 3]
