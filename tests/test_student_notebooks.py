"""Students' own chapter notebooks (no `# module:` lines; demo cells between the definitions,
redefinitions, helper cells, cross-cell imports, markdown in Chinese) are graded exactly like the
same code in modules: the same score, test by test, and the same diagnoses (issue 24). Near
misses are named; a notebook that yields nothing says so once. Every entry point reads them alike:
`grade`, nbgrader's grading of notebooks, Gradescope, PrairieLearn and the bundle's check.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import records
from grader.classroom import gradescope, prairielearn
from grader.classroom.nbgrader_autograde import grade_notebooks
from grader.i18n import LANGUAGES, Catalog
from grader.records import MODULE_SECTIONS, GradeResult, NearMiss, ProbeError, SectionScore
from grader.report.found import near_miss_said
from grader.run import grade
from tests.conftest import ROOT, mindspore_solutions_as_submission, solutions_as_submission
from tests.lms_downloads import zipped
from tests.student_notebooks import (
    FAILING_SCRATCH,
    SHAPES,
    assert_graded_alike,
    chapter_notebook,
    code,
    interleavings,
    module_sources,
    notebook,
    write_notebook,
)

EXAMPLES = ROOT / "examples" / "class"
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]


def near_miss_folder(folder: Path) -> Path:
    """The reference with the misspellings of the issue: a class name, a version suffix's case, a
    constructor and a forward misspelt, a keyword argument misspelt."""
    solutions_as_submission(folder)
    edits = {
        "sec3_6_multi_head_attention.py": [
            ("class MultiHeadAttention(nn.Module)", "class MultiHeadAttnetion(nn.Module)")
        ],
        "sec3_4_self_attention.py": [
            ("class SelfAttention_v2(", "class SelfAttention_V2("),
            ("    def __init__(self, d_in, d_out):", "    def __init_(self, d_in, d_out):"),
        ],
        "sec3_5_causal_attention.py": [
            (
                "dropout, qkv_bias=False):\n        super().__init__()\n        self.d_out",
                "dropout, qkv_bais=False):\n        super().__init__()\n"
                "        qkv_bias = qkv_bais\n        self.d_out",
            ),
            ("    def forward(self, x):\n        b, num_tokens", "    def forwad(self, x):\n        b, num_tokens"),
        ],
    }
    for name, pairs in edits.items():
        path = folder / name
        text = path.read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new, 1)
        path.write_text(text)
    return folder


FAILING_HELPER = "import math\nDIAGONAL = int(math.log(0))  # a helper constant that fails"


def failing_helper(sources: dict[str, str]) -> dict:
    """The reference's notebook with helper cells, its constant's cell failing (3.5 needs it)."""
    document = chapter_notebook(sources, "helpers")
    cells = document["cells"]
    [at] = [i for i, c in enumerate(cells) if c["source"] == "DIAGONAL = 1"]
    cells[at] = code(FAILING_HELPER)
    cells[at + 1 : at + 1] = [code(source) for source in FAILING_SCRATCH]  # scratch that fails: costs nothing
    return document


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("student-notebooks")
    klass = base / "class"
    sources = {}
    for student in STUDENTS:
        shutil.copytree(EXAMPLES / student, klass / f"{student}-py")
        sources[student] = module_sources(EXAMPLES / student)
    sources["reference"] = module_sources(solutions_as_submission(klass / "reference-py"))
    for student, modules in sources.items():
        for index, shape in enumerate(SHAPES):
            write_notebook(klass / f"{student}-{shape}", chapter_notebook(modules, shape, seed=index))
    ms = pytest.importorskip("mindspore") and mindspore_solutions_as_submission(klass / "ms-reference-py")
    write_notebook(klass / "ms-reference-demos", chapter_notebook(module_sources(ms), "demos"))
    shutil.copytree(ROOT / "examples" / "mindspore-class" / "mei", klass / "mei-py")
    write_notebook(klass / "mei-demos", chapter_notebook(module_sources(klass / "mei-py"), "demos", seed=3))
    near = module_sources(near_miss_folder(klass / "nearmiss-py"))
    write_notebook(klass / "nearmiss-demos", chapter_notebook(near, "demos"))
    write_notebook(klass / "failing-helper", failing_helper(sources["reference"]))
    write_notebook(
        klass / "nothing",
        notebook([code("def my_softmax(x):\n    return x"), code("class SelfAttention:\n    pass"), code("print(1)")]),
    )
    summary = grade(klass, base / "out", jobs=2, force=True)
    results = {}
    for name in summary.names:
        folder = summary.out_of[name]
        results[name] = {
            "json": json.loads((folder / "results.json").read_text(encoding="utf-8")),
            "md": (folder / "feedback.md").read_text(encoding="utf-8"),
            "html": (folder / "feedback.html").read_text(encoding="utf-8"),
        }
    return {"results": results, "class": klass}


PAIRS = [(s, f"{s}-{shape}") for s in ["reference", *STUDENTS] for shape in SHAPES] + [
    ("ms-reference", "ms-reference-demos"),
    ("mei", "mei-demos"),
    ("nearmiss", "nearmiss-demos"),
]


@pytest.mark.parametrize("student, notebook_form", PAIRS, ids=[n for _, n in PAIRS])
def test_a_students_notebook_scores_and_is_diagnosed_like_the_same_code_in_modules(graded, student, notebook_form):
    results, klass = graded["results"], graded["class"]
    py, nb = results[f"{student}-py"]["json"], results[notebook_form]["json"]
    assert_graded_alike(py, klass / f"{student}-py", nb, klass / notebook_form, same_messages=student != "nearmiss")


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_interleaving_of_definitions_and_scratch_cells_is_graded_like_the_modules(graded, tmp_path_factory, data):
    """A property, graded end to end: a student of the example class, their definitions in book
    order with scratch cells (some failing), Chinese markdown, broken first drafts and cross-cell
    imports drawn anywhere between them: the notebook scores and is diagnosed as their modules."""
    student = data.draw(st.sampled_from(STUDENTS))
    cells = data.draw(interleavings(module_sources(EXAMPLES / student)))
    base = tmp_path_factory.mktemp("interleaved")
    write_notebook(base / student, notebook(cells))
    summary = grade(base / student, base / "out", jobs=1, force=True)
    [name] = summary.names
    nb = json.loads((summary.out_of[name] / "results.json").read_text(encoding="utf-8"))
    py_folder = graded["class"] / f"{student}-py"
    assert_graded_alike(graded["results"][f"{student}-py"]["json"], py_folder, nb, base / student)


def test_every_report_says_how_each_module_was_found(graded):
    results = graded["results"]
    py, nb = results["alice-py"], results["alice-demos"]
    assert "3.5 Causal attention: `sec3_5_causal_attention.py`." in py["md"]
    recognised = re.search(r"3\.5 Causal attention: `ch3\.ipynb`, code cells ([\d, ]+), recognised", nb["md"])
    assert recognised is not None
    cells = [f for f in nb["json"]["found"] if f["module"] == "sec3_5_causal_attention"][0]["cells"]
    assert recognised.group(1) == ", ".join(str(c) for c in cells)
    assert "CausalAttention" in nb["md"].split("## Where your code was found")[1].split("##")[0]


def test_near_misses_are_named_with_both_names_and_where(graded):
    results = graded["results"]
    for form, where in (
        ("nearmiss-py", "`sec3_6_multi_head_attention.py`, line"),
        ("nearmiss-demos", "`ch3.ipynb`, code cell"),
    ):
        document, md = results[form]["json"], results[form]["md"]
        misses = {(m["kind"], m["wanted"], m["found"]) for m in document["near_misses"]}
        assert misses == {
            ("name", "MultiHeadAttention", "MultiHeadAttnetion"),
            ("name", "SelfAttention_v2", "SelfAttention_V2"),
            ("keyword", "qkv_bias", "qkv_bais"),
            ("method", "forward", "forwad"),
            ("method", "__init__", "__init_"),
        }
        tests = {t["id"]: t for t in document["tests"]}
        message = tests["sec3_6_multi_head_attention::test_mha_matches_reference"]["message"]
        assert "`MultiHeadAttnetion`" in message and "`MultiHeadAttention`" in message and where in message
        assert ".py does not define" not in message or form == "nearmiss-py"
        assert any("`qkv_bais`" in t["message"] for t in tests.values() if t["id"].startswith("sec3_5"))
        assert any("`forwad`" in t["message"] for t in tests.values() if t["id"].startswith("sec3_5"))
        assert any("`__init_`" in t["message"] for t in tests.values() if t["id"].startswith("sec3_4"))
        assert "## Names that look misspelt" in md or "### Names that look misspelt" in md


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_near_miss_is_said_in_each_language_with_both_names_and_its_place(lang):
    catalog = Catalog(lang)
    for miss in (
        NearMiss("sec3_6_multi_head_attention", "name", "MultiHeadAttention", "MultiHeadAttnetion", "ch3.ipynb", 3, 12),
        NearMiss(
            "sec3_5_causal_attention",
            "method",
            "__init__",
            "__init_",
            "sec3_5_causal_attention.py",
            9,
            0,
            "CausalAttention",
        ),
        NearMiss("sec3_5_causal_attention", "keyword", "qkv_bias", "qkv_bais", "ch3.ipynb", 4, 7, "CausalAttention"),
    ):
        said = near_miss_said(miss, catalog).markdown()
        assert f"`{miss.found}`" in said and f"`{miss.wanted}`" in said and "`" + miss.file + "`" in said
        assert str(miss.line) in said and (not miss.cell or str(miss.cell) in said)
        assert ".py" not in said.replace("sec3_5_causal_attention.py", "")


def test_a_notebook_that_yields_nothing_says_so_once(graded):
    result = graded["results"]["nothing"]
    kinds = [n["kind"] for n in result["json"]["integrity"] if n["kind"].startswith("submission.")]
    assert kinds == ["submission.notebook-nothing-found"]
    md = result["md"]
    assert "`ch3.ipynb (my_softmax, SelfAttention)`" in md
    assert ".py is missing" not in md
    missing = Catalog("en").t("import.missing-notebook", module="sec3_3_simple_attention")
    assert md.count(missing) == 0  # said once per section, by the section's "where to start"
    assert md.count("no code for this section was found") == 7


def test_a_failing_cell_a_definition_needs_is_reported_at_its_cell_and_line_and_scratch_costs_nothing(graded):
    folder = graded["class"] / "failing-helper"
    cells = [
        c for c in json.loads((folder / "ch3.ipynb").read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
    ]
    cell = next(number for number, c in enumerate(cells, start=1) if c["source"] == FAILING_HELPER)
    tests = graded["results"]["failing-helper"]["json"]["tests"]
    where = f"`ch3.ipynb`, code cell {cell}, line 2"
    for test in tests:
        if test["id"].startswith(("sec3_3", "sec3_4")):
            assert test["status"] == "passed", test["id"]  # nothing else fails: not the scratch cells
        if test["id"].startswith("sec3_5"):
            assert test["status"] == "error" and "fails to import" in test["message"], test["id"]
            assert where in test["message"], test["id"]


# -- every entry point reads the same notebook the same way -----------------------------------------------


def _upload(root: Path, folder: str, files: dict[str, bytes]) -> Path:
    upload = root / folder
    upload.mkdir(parents=True)
    for name, data in files.items():
        (upload / name).write_bytes(data)
    return root


def test_every_entry_point_grades_a_students_notebook_like_grade(graded, tmp_path):
    """Gradescope's and PrairieLearn's runs (the upload a notebook, or a zip of it), and nbgrader's
    grading of notebooks: the score `grade` gave the same notebook."""
    notebook_bytes = (graded["class"] / "carol-demos" / "ch3.ipynb").read_bytes()
    expected = graded["results"]["carol-demos"]["json"]
    assert expected["score"] < expected["max_score"]
    scope = gradescope.run(_upload(tmp_path / "gs", "submission", {"ch3.ipynb": notebook_bytes}))
    assert scope["score"] == expected["score"]
    learn = prairielearn.run(_upload(tmp_path / "pl", "student", {"ch3.zip": zipped({"ch3.ipynb": notebook_bytes})}))
    assert learn["gradable"] and learn["score"] == pytest.approx(expected["score"] / expected["max_score"])
    [(_, result)] = grade_notebooks({"carol": graded["class"] / "carol-demos" / "ch3.ipynb"}, "ch3").values()
    assert result.score == expected["score"]


def test_the_bundles_check_reads_a_students_notebook_like_its_modules(graded, tmp_path):
    from grader.classroom.release import write_release
    from tests.test_release import bundle_checker

    bundle = tmp_path / "bundle"
    write_release(bundle)
    checker = bundle_checker(bundle, "notebook_check")
    module = next(checker)
    try:
        from ch3_checks import Messages

        outcomes = {}
        for form in ("carol-py", "carol-redefined", "alice-helpers"):
            results, problems = module.check_folder(graded["class"] / form, Messages("en"))
            assert problems == []
            outcomes[form] = [(r["key"], r["status"]) for r in results]
        assert outcomes["carol-redefined"] == outcomes["carol-py"]
        assert {status for _, status in outcomes["alice-helpers"]} == {"pass"}
    finally:
        next(checker, None)


def test_gradescope_says_a_missing_module_once_not_in_each_of_its_tests():
    """A section without code: its checks' own outputs do not say it (only what each check wants, its
    hint), the top-level output says it once (where to start); another section's failing check
    keeps its message."""
    catalog = Catalog("en")
    module, other = "sec3_3_simple_attention", "sec3_5_causal_attention"
    error = ProbeError("import", key="import.missing-notebook", module=module, params={"module": module})

    def outcome(
        mod: str, name: str, status: str, message: str = "", error: ProbeError | None = None
    ) -> records.TestOutcome:
        return records.TestOutcome(
            f"{mod}::{name}", mod, name, MODULE_SECTIONS[mod], status, 0.0, 1.0, message, error=error
        )

    tests = [
        outcome(module, "test_softmax_naive", "error", error=error),
        outcome(module, "test_attention_weights", "error", error=error),
        outcome(other, "test_mask", "failed", "values differ"),
    ]
    sections = [SectionScore(MODULE_SECTIONS[m], m, 0.0, 2.0 if m == module else 1.0) for m in (module, other)]
    result = gradescope.to_gradescope(GradeResult("s", "hash", 0.0, 3.0, sections, tests, []), catalog)
    said = "no code for this section was found"
    assert said in result["output"]
    assert json.dumps(result, ensure_ascii=False).count(said) == 1
    assert not any("No code for" in t["output"] or module in t["output"] for t in result["tests"])
    assert "values differ" in result["tests"][2]["output"]
