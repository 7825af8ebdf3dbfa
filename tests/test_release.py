"""`grade release`: the student bundle holds stubs, README and public checks, and nothing secret; its
check.py reads .py files and notebooks by the grader's own rules and tells the truth about them."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.classroom.release import KIT_DIR, intake_closure
from grader.i18n import Catalog
from tests.buggy import all_buggy
from tests.conftest import MODULES, ROOT, forget_public_checks, solutions_as_submission, stubs_as_submission

SECRET_ROOTS = [
    ROOT / "grader" / "suites",
    ROOT / "grader" / "probes",
    ROOT / "grader" / "diagnosis",
    ROOT / "solutions",
]
BOOK_ORDER = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "exercise3_1_weight_transfer",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]
SIBLING = re.compile(r"^from (sec3_\w+|exercise3_\w+) import .*$\n?", re.M)
ALL_PASS = "44 of 44 checks pass"
SOFTMAX_NAIVE_CHECKS = {"sec3_3-softmax", "sec3_3-softmax-values"}  # the public checks that call softmax_naive


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "bundle"
    subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out)], check=True, cwd=ROOT, capture_output=True, timeout=120
    )
    return out


def _normal(text: str) -> str:
    """Code without comments, whitespace collapsed: reformatting or re-commenting does not hide it."""
    return re.sub(r"\s+", " ", re.sub(r"#[^\n]*", "", text)).strip()


def secret_snippets() -> list[tuple[str, str]]:
    """(where, normalised code) for every function body of the suites, probes, variants and
    solutions that is more than a one-liner stub: the bundle may contain none of them."""
    snippets = []
    for root in SECRET_ROOTS:
        for file in sorted(root.rglob("*.py")):
            source = file.read_text(encoding="utf-8")
            snippets.append((str(file.relative_to(ROOT)), _normal(source)))
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
                if not body:
                    continue
                code = _normal("\n".join(ast.get_source_segment(source, n) or "" for n in body))
                if len(code) >= 40:
                    snippets.append((f"{file.relative_to(ROOT)}:{node.name}", code))
    return snippets


def leaks(bundle: Path) -> list[str]:
    files = {
        str(f.relative_to(bundle)): _normal(f.read_text(encoding="utf-8", errors="replace"))
        for f in bundle.rglob("*")
        if f.is_file()
    }
    # The grader's intake is shipped on purpose; a body it has verbatim too (an exception's
    # __init__, say) is boilerplate, not a secret.
    public = " ".join(_normal(file.read_text(encoding="utf-8")) for file in intake_closure().values())
    found = []
    for where, snippet in secret_snippets():
        if snippet in public:
            continue
        for name, text in files.items():
            if snippet and snippet in text:
                found.append(f"{where} in {name}")
    shipped_kit = {f"{KIT_DIR}/{file.relative_to(ROOT)}" for file in intake_closure().values()}
    for name in files:
        if Path(name).name.startswith("test_") or name.startswith(("grader", "solutions")):
            found.append(f"hidden-looking file {name}")
        if name.startswith(KIT_DIR + "/") and name not in shipped_kit:
            found.append(f"kit file beyond the intake {name}")
    return found


def test_bundle_layout(bundle):
    names = {str(f.relative_to(bundle)) for f in bundle.rglob("*") if f.is_file()}
    assert {
        "README.md",
        "check.py",
        "ch3_checks.py",
        "ch3_check_list.py",
        "check_messages.json",
        "check_report.txt.j2",
        "exercises/README.md",
        f"{KIT_DIR}/grader/intake/__init__.py",
    } <= names
    assert {f"exercises/{m}.py" for m in MODULES} <= names
    for module in MODULES:
        assert (bundle / "exercises" / f"{module}.py").read_bytes() == (
            ROOT / "grader" / "exercises" / f"{module}.py"
        ).read_bytes()
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert "python check.py" in readme and "python check.py my_chapter3.ipynb" in readme and "{" not in readme


CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def test_the_readme_installs_torchs_cpu_build_and_asks_for_no_module_lines(bundle):
    """`pip install torch` brings the CUDA build on Linux (gigabytes); a chapter notebook is read
    by the names it defines, so no cell needs a `# module:` line."""
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert CPU_TORCH in readme and "# module:" not in readme
    for lang in ("en", "zh"):
        catalog = Catalog(lang)
        assert CPU_TORCH in catalog.t("classroom.release.readme-requirements")
        assert "# module:" not in catalog.t("classroom.release.readme-notebooks")


def test_bundle_holds_no_hidden_test_or_solution_code(bundle):
    assert leaks(bundle) == []


def test_the_leak_detector_finds_planted_secrets(bundle, tmp_path):
    copy = shutil.copytree(bundle, tmp_path / "copy")
    # A solution function pasted into a stub, reformatted: still found.
    solution = (ROOT / "solutions" / "sec3_5_causal_attention.py").read_text(encoding="utf-8")
    body = solution.split("def masked_attention_weights", 1)[1].split("\n\n\n", 1)[0]
    (copy / "exercises" / "sec3_5_causal_attention.py").write_text("def masked_attention_weights" + body)
    suite = next((ROOT / "grader" / "suites" / "hidden").glob("test_*.py"))
    shutil.copy(suite, copy / "public_tests.py")
    shutil.copy(ROOT / "grader" / "answer_key.py", copy / KIT_DIR / "grader" / "answer_key.py")
    found = leaks(copy)
    assert any("solutions/sec3_5_causal_attention.py:masked_attention_weights" in f for f in found)
    assert any(f"grader/suites/hidden/{suite.name}" in f for f in found)
    assert f"kit file beyond the intake {KIT_DIR}/grader/answer_key.py" in found


def test_the_shipped_intake_is_the_graders_own_and_needs_only_python(bundle):
    """check.py finds code by the grader's rules because it runs the grader's own intake, which
    must import nothing a student's Python lacks."""
    closure = intake_closure()
    assert {
        f"grader.intake.{f.stem}" for f in (ROOT / "grader" / "intake").glob("*.py") if f.stem != "__init__"
    } <= set(closure)
    for name, file in closure.items():
        assert (bundle / KIT_DIR / file.relative_to(ROOT)).read_bytes() == file.read_bytes()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= set(sys.stdlib_module_names) | {"grader"}, (name, roots)


# -- check.py, run as a student runs it ---------------------------------------------------------------


def _check(bundle: Path, target: Path | None = None, *args: str, numpy: bool = True) -> subprocess.CompletedProcess:
    """`python check.py [TARGET]` in a clean environment. numpy=False: a Python without NumPy (pip
    install torch alone does not bring it; torch then warns on import)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"}
    if not numpy:
        fake = bundle.parent / "no-numpy"
        (fake / "numpy").mkdir(parents=True, exist_ok=True)
        (fake / "numpy" / "__init__.py").write_text(
            "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')"
        )
        env["PYTHONPATH"] = str(fake)
    command = [sys.executable, str(bundle / "check.py"), *([str(target)] if target else []), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=bundle, env=env)


def one_next_step(out: str) -> str:
    """The one next step: the check that "Start here" marks is the one "Next:" names."""
    lines = out.splitlines()
    marked = [i for i, line in enumerate(lines) if line.strip().startswith("Start here ->")]
    assert len(marked) == 1, out
    check = re.sub(r"\s+\[.*\]$", "", lines[marked[0] - 1].strip()[2:])
    assert f"Next: {check}" in lines, out
    return check


def test_check_on_the_stubs_says_where_to_start_and_nothing_else(bundle):
    result = _check(bundle, numpy=False)
    assert result.returncode == 1
    assert result.stderr == ""  # no warning of torch's about NumPy, nor anything else
    assert "0 of 44 checks pass" in result.stdout
    # the grader's place to start: the first function of 3.3 in the book (and in the stub)
    assert (
        one_next_step(result.stdout) == "attention_scores_for_query(inputs, 2) gives the reference's attention scores"
    )
    assert (
        "Start here -> attention_scores_for_query still raises NotImplementedError (sec3_3_simple_attention.py, line"
        in result.stdout
    )


def test_check_on_correct_code_passes_and_speaks_chinese(bundle, tmp_path):
    folder = solutions_as_submission(tmp_path / "mine")
    result = _check(bundle, folder)
    assert result.returncode == 0, result.stdout
    assert ALL_PASS in result.stdout and "Next:" not in result.stdout
    result = _check(bundle, folder, "--lang", "zh")
    assert result.returncode == 0 and "44 项检查中通过了 44 项" in result.stdout and "因果注意力" in result.stdout


def test_check_passes_correct_code_that_sets_float64_as_the_default_dtype(bundle, tmp_path):
    """A student module that calls torch.set_default_dtype(torch.float64) at import once made 18 of
    the 44 public checks fail on correct code (inputs and initial weights drawn in float64), while
    the grader gave full marks: each check now starts from float32, as each probe does."""
    folder = solutions_as_submission(tmp_path / "mine")
    module = folder / "sec3_3_simple_attention.py"
    module.write_text(module.read_text() + "\ntorch.set_default_dtype(torch.float64)\n")
    result = _check(bundle, folder)
    assert result.returncode == 0, result.stdout
    assert ALL_PASS in result.stdout


def test_check_gives_the_reason_of_each_failure(bundle, tmp_path):
    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_5_causal_attention.py"
    source = path.read_text()
    # mask-not-sliced: the full context_length mask on a shorter input fails with a shape error.
    buggy = source.replace("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")
    assert buggy != source
    path.write_text(buggy)
    path2 = folder / "sec3_3_simple_attention.py"
    path2.write_text(path2.read_text().replace("sum(dim=-1, keepdim=True)", "sum(dim=0, keepdim=True)", 1))
    result = _check(bundle, folder)
    assert result.returncode == 1
    out = result.stdout
    assert "each row of softmax_naive(x) sums to 1  [not yet]" in out
    assert re.search(r"Start here -> softmax_naive\(x\)\.sum\(dim=-1\): expected \[1, 1, 1\], got \[[0-9.]+, ", out)
    assert re.search(r"RuntimeError: .* \(sec3_5_causal_attention\.py, line \d+\)\n +attn_scores\.masked_fill_", out)
    assert one_next_step(out) == "each row of softmax_naive(x) sums to 1"


# -- notebooks ----------------------------------------------------------------------------------------


def code_cell(source: str, **metadata) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [], "source": source}


def notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}


def where_in_code_cells(document: dict, first_line: str, text: str) -> tuple[int, int]:
    """(code cell, line in it) of TEXT in the cell that starts with FIRST_LINE: code cells numbered
    as Jupyter's users count them (markdown cells are not)."""
    cells = [c for c in document["cells"] if c["cell_type"] == "code"]
    cell = next(i for i, c in enumerate(cells, 1) if first_line in c["source"])
    return cell, cells[cell - 1]["source"].split("\n").index(text) + 1


def module_code(folder: Path, module: str) -> str:
    """A module's code as a chapter notebook holds it: no sibling imports (one namespace)."""
    return SIBLING.sub("", (folder / f"{module}.py").read_text())


def chapter_notebook(source: Path, path: Path, edit=lambda module, code: code) -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Chapter 3"},
        code_cell("import torch\nimport torch.nn as nn"),
    ]
    cells += [code_cell(f"# module: {module}\n{edit(module, module_code(source, module))}") for module in BOOK_ORDER]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook(cells)))
    return path


def test_check_reads_a_chapter_notebook_and_per_section_notebooks(bundle, tmp_path):
    solutions = solutions_as_submission(tmp_path / "py")
    chapter = chapter_notebook(solutions, tmp_path / "chapter" / "my_chapter3.ipynb")
    assert ALL_PASS in _check(bundle, chapter.parent).stdout
    assert ALL_PASS in _check(bundle, chapter).stdout  # one notebook given directly
    sections = tmp_path / "sections"
    sections.mkdir()
    for module in MODULES:
        (sections / f"{module}.ipynb").write_text(
            json.dumps(notebook([code_cell((solutions / f"{module}.py").read_text())]))
        )
    assert ALL_PASS in _check(bundle, sections).stdout


def test_check_on_a_blank_and_a_buggy_notebook_says_where_in_the_notebook(bundle, tmp_path):
    stubs = stubs_as_submission(tmp_path / "stubs")
    blank = _check(bundle, chapter_notebook(stubs, tmp_path / "blank" / "ch3.ipynb"))
    assert "0 of 44 checks pass" in blank.stdout
    assert re.search(
        r"Start here -> attention_scores_for_query still raises NotImplementedError"
        r" \(ch3\.ipynb, code cell 2, line \d+\)",
        blank.stdout,
    ), blank.stdout
    one_next_step(blank.stdout)

    solutions = solutions_as_submission(tmp_path / "py")

    def mask_not_sliced(module, code):
        return code.replace("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")

    buggy = _check(bundle, chapter_notebook(solutions, tmp_path / "buggy" / "ch3.ipynb", mask_not_sliced))
    assert "CausalAttention: changing the last token leaves earlier outputs unchanged  [not yet]" in buggy.stdout
    # code cells are numbered as Jupyter's users count them (the markdown cell is not one): 3.5 is code cell 5
    assert re.search(
        r"RuntimeError: .* \(ch3\.ipynb, code cell 5, line \d+\)\n +attn_scores\.masked_fill_", buggy.stdout
    )


def test_check_reports_an_unreadable_notebook_and_a_missing_module(bundle, tmp_path):
    folder = solutions_as_submission(tmp_path / "mine")
    (folder / "sec3_6_multi_head_attention.py").unlink()
    (folder / "notes.ipynb").write_text('{"cells": [')
    out = _check(bundle, folder).stdout
    assert "The notebook notes.ipynb (1:12) is damaged" in out
    assert "sec3_6_multi_head_attention: no code found" in out and "# module: sec3_6_multi_head_attention" in out


def test_check_reads_a_gbk_module_and_a_notebook_with_a_lone_surrogate(bundle, tmp_path):
    """As the grader reads them (the same intake): a module in GBK with its coding declaration, and
    a notebook whose JSON holds a lone surrogate (check.py used to die with a UnicodeEncodeError)."""
    folder = solutions_as_submission(tmp_path / "mine")
    source = (folder / "sec3_3_simple_attention.py").read_text()
    (folder / "sec3_3_simple_attention.py").write_bytes(
        ("# -*- coding: gbk -*-\n# 第三章 注意力机制\n" + source + "\nTITLE = '注意力'\n").encode("gbk")
    )
    source = (folder / "sec3_4_self_attention.py").read_text()
    (folder / "sec3_4_self_attention.py").unlink()
    (folder / "sec3_4_self_attention.ipynb").write_text(
        json.dumps(notebook([code_cell(source + "\nNOTE = 'PLACE'\n")])).replace("PLACE", "\\udc80")
    )
    run = _check(bundle, folder)
    assert ALL_PASS in run.stdout, run.stdout + run.stderr
    assert run.returncode == 0


# -- in-process, on many inputs ------------------------------------------------------------------------


def bundle_checker(bundle: Path, name: str):
    """A bundle's check.py as a module (its ch3_checks and check list from the bundle too), for a
    fixture to yield; any other bundle's modules are forgotten before, this one's afterwards."""
    forget_public_checks()
    sys.path.insert(0, str(bundle))
    spec = importlib.util.spec_from_file_location(name, bundle / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(bundle))
    forget_public_checks()


@pytest.fixture(scope="module")
def checker(bundle):
    """The bundle's check.py as a module."""
    yield from bundle_checker(bundle, "bundle_check")


def statuses(checker, folder: Path, modules=tuple(BOOK_ORDER)) -> list[dict]:
    from ch3_checks import Messages

    results, problems = checker.check_folder(folder, Messages("en"), modules)
    assert problems == []
    return results


def overlay(tmp_path: Path, variant: Path) -> Path:
    """The reference as a submission, with a variant's modules in place of its own."""
    folder = solutions_as_submission(tmp_path)
    for file in variant.glob("*.py"):
        shutil.copy(file, folder / file.name)
    return folder


@pytest.mark.parametrize("variant", sorted(p.name for p in (ROOT / "tests" / "submissions" / "correct").iterdir()))
def test_every_correct_implementation_passes_every_public_check(checker, tmp_path, variant):
    folder = overlay(tmp_path / variant, ROOT / "tests" / "submissions" / "correct" / variant)
    failing = [(r["key"], r["note"]) for r in statuses(checker, folder) if r["status"] != "pass"]
    assert failing == []


def test_buggy_implementations_get_a_reason_for_every_failure(checker, tmp_path):
    caught = []
    for variant in all_buggy():
        changed = tuple(variant.sources)
        folder = variant.write(solutions_as_submission(tmp_path / variant.name))
        results = statuses(checker, folder, changed)
        failing = [r for r in results if r["status"] != "pass"]
        assert all(r["note"] for r in failing), variant.name
        if failing:
            caught.append(variant.name)
    print(f"public checks catch {len(caught)} buggy submissions: {caught}")
    assert len(caught) >= 20  # public checks catch the first mistakes, not all of them


TORCH_SOLUTIONS, TORCH_PREAMBLE = ROOT / "solutions", "import torch\nimport torch.nn as nn"


def layout_code(module: str, per_section: bool, solutions: Path = TORCH_SOLUTIONS) -> str:
    """The reference module as a student writes it: sibling imports in a per-section notebook,
    none in a chapter notebook (one namespace)."""
    source = re.sub(r"^from \.(\w+) import", r"from \1 import", (solutions / f"{module}.py").read_text(), flags=re.M)
    return source if per_section else SIBLING.sub("", source)


@st.composite
def notebook_layouts(draw, solutions: Path = TORCH_SOLUTIONS):
    """The reference split into cells at random top-level boundaries, each cell assigned to its
    module by a first-line marker, a tag or cell metadata, with markdown between; as one chapter
    notebook or as one notebook per section."""
    per_section = draw(st.booleans())
    layout = {}
    for module in BOOK_ORDER:
        statements = ast.parse(layout_code(module, per_section, solutions)).body
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(statements) - 1)), max_size=3)))
        marks = [draw(st.sampled_from(["line", "tag", "metadata"])) for _ in range(len(cuts) + 1)]
        layout[module] = (cuts, marks, draw(st.booleans()))
    return per_section, layout


def write_layout(
    folder: Path,
    per_section: bool,
    layout: dict,
    solutions: Path = TORCH_SOLUTIONS,
    preamble: str = TORCH_PREAMBLE,
    edit=lambda module, code: code,
) -> None:
    """`layout` written as notebooks; `edit(module, code)` changes a module's code (within its statements)."""
    folder.mkdir(parents=True)
    chapter = [code_cell(preamble)]
    for module, (cuts, marks, notes) in layout.items():
        code = edit(module, layout_code(module, per_section, solutions))
        lines = code.splitlines()
        tree = ast.parse(code).body
        bounds = [0, *[tree[c].lineno - 1 - len(getattr(tree[c], "decorator_list", [])) for c in cuts], len(lines)]
        cells = []
        for (start, end), mark in zip(zip(bounds, bounds[1:]), marks):
            text = "\n".join(lines[start:end])
            if per_section:
                cells.append(code_cell(text))
            elif mark == "line":
                cells.append(code_cell(f"# module: {module}\n{text}"))
            elif mark == "tag":
                cells.append(code_cell(text, tags=[f"module:{module}"]))
            else:
                cells.append(code_cell(text, attention_kit={"module": module}))
            if notes:
                cells.append({"cell_type": "markdown", "metadata": {}, "source": "Some notes."})
        if per_section:
            (folder / f"{module}.ipynb").write_text(json.dumps(notebook(cells)))
        chapter += cells
    if not per_section:
        (folder / "chapter3.ipynb").write_text(json.dumps(notebook(chapter)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notebook_layouts())
def test_correct_code_passes_in_any_notebook_layout(checker, tmp_path_factory, layout):
    folder = tmp_path_factory.mktemp("layout") / "nb"
    write_layout(folder, *layout)
    failing = [(r["key"], r["note"]) for r in statuses(checker, folder) if r["status"] != "pass"]
    assert failing == []


# -- the public checks in a notebook's test cell ---------------------------------------------------


def notebook_namespace(folder: Path) -> dict:
    """What a chapter notebook's kernel holds after running every cell: one namespace."""
    namespace: dict = {}
    for module in BOOK_ORDER:
        exec(compile(module_code(folder, module), f"<cell {module}>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_test_cell_reports_in_the_courses_language_within_validates_width(tmp_path, lang, capsys):
    from grader.classroom.release import write_public_checks
    from grader.i18n import Catalog

    write_public_checks(tmp_path / "course", lang)
    sys.path.insert(0, str(tmp_path / "course"))
    try:
        import ch3_checks

        t = ch3_checks.Messages()
        with pytest.raises(ch3_checks.ChecksNotPassed) as failed:
            ch3_checks.check_section("sec3_5_causal_attention", notebook_namespace(stubs_as_submission(tmp_path / "s")))
        lines = failed.value._render_traceback_()
        assert all(len(line) <= 82 for line in lines), lines  # nbgrader validate cuts lines past 87 columns
        text = "\n".join(lines)
        assert t("next", check=t("items.sec3_5-simple-mask")) in text
        assert text.count(t("start-here")) == 1 and "NotImplementedError" in text
        assert Catalog(lang).t("sections.3_5") in text

        ch3_checks.check_section(
            "sec3_5_causal_attention", notebook_namespace(solutions_as_submission(tmp_path / "ok"))
        )
        assert t("section-all-pass") in " ".join(capsys.readouterr().out.split())
    finally:
        sys.path.remove(str(tmp_path / "course"))
        forget_public_checks()


def test_a_test_cell_run_before_the_code_cells_says_to_run_them(tmp_path):
    from grader.classroom.release import write_public_checks

    write_public_checks(tmp_path / "course", "en")
    sys.path.insert(0, str(tmp_path / "course"))
    try:
        import ch3_checks

        with pytest.raises(ch3_checks.ChecksNotPassed) as failed:
            ch3_checks.check_section("sec3_3_simple_attention", {})
        assert "softmax_naive is not defined. Run the cells above first" in failed.value.report
    finally:
        sys.path.remove(str(tmp_path / "course"))
        forget_public_checks()


def test_a_student_calling_exit_costs_only_that_check(checker, tmp_path):
    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_3_simple_attention.py"
    path.write_text(
        path.read_text().replace("def softmax_naive(x):\n", "def softmax_naive(x):\n    raise SystemExit(3)\n", 1)
    )
    results = statuses(checker, folder, ("sec3_3_simple_attention",))
    assert {r["key"] for r in results if r["status"] != "pass"} == SOFTMAX_NAIVE_CHECKS  # the others pass
    assert results[0]["note"].startswith("SystemExit: 3 (sec3_3_simple_attention.py, line")


def test_an_error_is_located_in_its_own_cell_even_when_a_scratch_cell_has_the_same_line(checker, tmp_path):
    """The faulty line of CausalAttention (code cell 6) also stands in a scratch cell the student tried
    it in (code cell 1): the report names code cell 6, where the intake says the failing line came from (it
    named the first cell holding the same text before)."""
    solutions = solutions_as_submission(tmp_path / "py")
    wrong = "        attn_weights = attn_weights @ values.mT"

    def transposed_values(module, code):
        if module != "sec3_5_causal_attention":
            return code
        return code.replace(
            "        attn_weights = self.dropout(attn_weights)  # [checkpoint: dropped]\n",
            "        attn_weights = self.dropout(attn_weights)\n" + wrong + "\n",
        )

    path = chapter_notebook(solutions, tmp_path / "nb" / "ch3.ipynb", transposed_values)
    document = json.loads(path.read_text())
    document["cells"].insert(
        1, code_cell("attn_weights, values = torch.rand(2, 6, 6), torch.rand(2, 6, 2)\n" + wrong.strip())
    )
    path.write_text(json.dumps(document))
    cell, line = where_in_code_cells(document, "# module: sec3_5_causal_attention", wrong)
    results = statuses(checker, path.parent, ("sec3_5_causal_attention",))
    shape = next(r for r in results if r["key"] == "sec3_5-shape")
    assert shape["status"] == "fail" and shape["code"] == wrong.strip()
    assert shape["note"].endswith(f"(ch3.ipynb, code cell {cell}, line {line})"), shape["note"]


def _with_softmax_naive_prefix(folder: Path, top: str = "", first_line: str = "") -> Path:
    """The reference, with `top` above sec3_3's code and `first_line` as softmax_naive's first statement."""
    path = folder / "sec3_3_simple_attention.py"
    code = path.read_text()
    if first_line:
        code = code.replace("def softmax_naive(x):\n", f"def softmax_naive(x):\n    {first_line}\n", 1)
    path.write_text(top + code)
    return folder


def test_an_exception_whose_str_calls_exit_costs_only_its_check(checker, tmp_path):
    """str() of the student's exception raising SystemExit ended check.py silently before."""
    folder = _with_softmax_naive_prefix(
        solutions_as_submission(tmp_path / "mine"),
        "class Odd(Exception):\n    def __str__(self):\n        raise SystemExit(1)\n\n\n",
        "raise Odd()",
    )
    results = statuses(checker, folder, ("sec3_3_simple_attention",))
    assert {r["key"] for r in results if r["status"] != "pass"} == SOFTMAX_NAIVE_CHECKS  # the others pass
    assert results[0]["note"].startswith("Odd (sec3_3_simple_attention.py, line "), results[0]["note"]


def test_a_student_breaking_the_seeding_gets_a_reason_not_a_traceback(checker, tmp_path):
    """torch.manual_seed replaced at import broke the runner's own seeding, outside any check's try."""
    import torch

    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_3_simple_attention.py"
    path.write_text(path.read_text() + "\ntorch.manual_seed = None\n")
    manual_seed = torch.manual_seed
    try:
        results = statuses(checker, folder, ("sec3_3_simple_attention",))
    finally:
        torch.manual_seed = manual_seed
    assert all(r["status"] == "fail" and r["note"] for r in results)
    assert results[0]["note"].startswith("TypeError: 'NoneType' object is not callable")


def test_a_multi_head_attention_that_fails_for_every_input_does_not_pass_as_refusing(checker, tmp_path):
    """A NameError in __init__ made MultiHeadAttention(3, 5, 8, 0.0, num_heads=2) raise, and that
    passed "refuses d_out not divisible by num_heads"; the check now says the error instead."""
    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_6_multi_head_attention.py"
    path.write_text(
        path.read_text().replace("self.head_dim = d_out // num_heads", "self.head_dim = d_out // num_head", 1)
    )
    refuses = next(
        r for r in statuses(checker, folder, ("sec3_6_multi_head_attention",)) if r["key"] == "sec3_6-mha-raises"
    )
    assert refuses["status"] == "fail"
    assert refuses["note"].startswith(
        "NameError: name 'num_head' is not defined (sec3_6_multi_head_attention.py, line "
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_module_saved_as_utf16_is_named_and_gets_a_hint_not_an_empty_location(checker, tmp_path, lang):
    """Python reads a UTF-16 file as code with null bytes: its SyntaxError has no file or line, and
    the report said "(, line 0)" with no hint before."""
    from ch3_checks import Messages

    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_3_simple_attention.py"
    path.write_bytes(path.read_text().encode("utf-16"))
    t = Messages(lang)
    results, _ = checker.check_folder(folder, t, ("sec3_3_simple_attention",))
    note = results[0]["note"]
    assert "null bytes" in note and "line 0" not in note and t("where-module", module="sec3_3_simple_attention") in note
    assert note.endswith(t("hints.not-utf8")), note


def test_a_mismatch_names_the_line_where_the_computation_departs_in_a_py_file_and_a_notebook_cell(checker, tmp_path):
    """Expected vs actual, then the line of the student's code where the computation departs from
    the reference (the sum over the wrong dimension inside softmax_naive, not its def line nor a
    line of the caller): a .py line, or a notebook's code cell and line."""
    wrong = ".sum(dim=0, keepdim=True)"

    def softmax_over_columns(module, code):
        return code.replace(".sum(dim=-1, keepdim=True)", wrong, 1) if module == "sec3_3_simple_attention" else code

    folder = solutions_as_submission(tmp_path / "py")
    path = folder / "sec3_3_simple_attention.py"
    path.write_text(softmax_over_columns("sec3_3_simple_attention", path.read_text()))
    line = next(n for n, text in enumerate(path.read_text().split("\n"), 1) if wrong in text)
    row = statuses(checker, folder, ("sec3_3_simple_attention",))[0]
    assert row["note"].startswith("softmax_naive(x).sum(dim=-1): expected [1, 1, 1], got ")
    assert row["cause_id"] == "softmax-wrong-dim"
    assert f"(sec3_3_simple_attention.py, line {line}, in softmax_naive)" in row["departs"], row["departs"]
    assert wrong in row["departs_code"]

    chapter = chapter_notebook(
        solutions_as_submission(tmp_path / "src"), tmp_path / "nb" / "ch3.ipynb", softmax_over_columns
    )
    cell = json.loads(chapter.read_text())["cells"][2]["source"].split("\n")  # code cell 2 (after the imports)
    line = next(n for n, text in enumerate(cell, 1) if wrong in text)
    row = statuses(checker, chapter.parent, ("sec3_3_simple_attention",))[0]
    assert f"(ch3.ipynb, code cell 2, line {line}, in softmax_naive)" in row["departs"], row["departs"]


def test_a_chapter_notebook_cell_using_a_scratch_cells_variable_gets_a_hint(checker, tmp_path):
    """Demo code in a module cell using a variable of a cell without `# module:` runs in Jupyter but
    not when graded (only definitions and imports of such cells are kept): the NameError gets a hint
    saying so; the same NameError in a per-section notebook (every cell is the module) gets none."""
    from ch3_checks import Messages

    def demo(module, code):
        return (
            code + "\n\nprint(CausalAttention(3, 2, 6, 0.0)(batch).shape)\n"
            if module == "sec3_5_causal_attention"
            else code
        )

    path = chapter_notebook(solutions_as_submission(tmp_path / "py"), tmp_path / "nb" / "ch3.ipynb", demo)
    document = json.loads(path.read_text())
    document["cells"].insert(2, code_cell("batch = torch.rand(2, 6, 3)"))
    path.write_text(json.dumps(document))
    t = Messages("en")
    note = statuses(checker, path.parent, ("sec3_5_causal_attention",))[0]["note"]
    assert note.startswith("sec3_5_causal_attention stops with an error") and "NameError: name 'batch'" in note
    assert note.endswith(t("hints.notebook-scratch-name")), note

    sections = tmp_path / "sections"
    sections.mkdir()
    code = demo("sec3_5_causal_attention", (tmp_path / "py" / "sec3_5_causal_attention.py").read_text())
    (sections / "sec3_5_causal_attention.ipynb").write_text(json.dumps(notebook([code_cell(code)])))
    note = statuses(checker, sections, ("sec3_5_causal_attention",))[0]["note"]
    assert "NameError: name 'batch'" in note and t("hints.notebook-scratch-name") not in note, note
    assert note.endswith(t("hints.python-name-not-defined")), note  # Python's message, glossed


def test_a_thread_the_students_code_leaves_running_does_not_keep_check_py_from_ending(bundle, tmp_path):
    """A non-daemon thread started at import (a training loop) kept check.py running after its report."""
    folder = solutions_as_submission(tmp_path / "mine")
    path = folder / "sec3_3_simple_attention.py"
    path.write_text(
        path.read_text() + "\nimport threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()\n"
    )
    result = subprocess.run(
        [sys.executable, str(bundle / "check.py"), str(folder)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=bundle,
        env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
    )
    assert result.returncode == 0 and ALL_PASS in result.stdout


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scratch=st.lists(st.integers(0, 9), max_size=3), blank_lines=st.integers(0, 5))
def test_an_errors_cell_and_line_are_where_it_is_whatever_scratch_cells_repeat_it(
    checker, tmp_path_factory, scratch, blank_lines
):
    """Scratch cells holding the failing line, anywhere in the chapter notebook, and blank lines
    above it in its own cell: the report names the module cell and the line in it."""
    tmp_path = tmp_path_factory.mktemp("located")
    wrong = "        attn_weights = attn_weights @ values.mT"

    def transposed_values(module, code):
        if module != "sec3_5_causal_attention":
            return code
        return code.replace(
            "        attn_weights = self.dropout(attn_weights)  # [checkpoint: dropped]\n",
            "        attn_weights = self.dropout(attn_weights)\n" + "\n" * blank_lines + wrong + "\n",
        )

    path = chapter_notebook(solutions_as_submission(tmp_path / "py"), tmp_path / "nb" / "ch3.ipynb", transposed_values)
    document = json.loads(path.read_text())
    for position in scratch:
        document["cells"].insert(min(position, len(document["cells"])), code_cell(f"x = 1\n{wrong.strip()}"))
    path.write_text(json.dumps(document))
    cell, line = where_in_code_cells(document, "# module: sec3_5_causal_attention", wrong)
    shape = next(r for r in statuses(checker, path.parent, ("sec3_5_causal_attention",)) if r["key"] == "sec3_5-shape")
    assert shape["note"].endswith(f"(ch3.ipynb, code cell {cell}, line {line})"), shape["note"]


# -- check.py teaches: it names the cause a public check reveals, and no function is left unchecked ----


def _edited(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """The reference as a submission with one edit in one module."""
    folder = solutions_as_submission(tmp_path)
    path = folder / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return folder


def test_a_mask_and_renormalize_that_ignores_the_weights_fails_a_public_check(checker, tmp_path):
    """It returns the renormalised mask: rows of equal weights sum to 1 and are zero above the
    diagonal, so only a check on weights that are not uniform sees it."""
    folder = _edited(
        tmp_path,
        "sec3_5_causal_attention",
        "masked_simple = attn_weights * mask_simple",
        "masked_simple = mask_simple * torch.ones_like(attn_weights)",
    )
    failing = [r["key"] for r in statuses(checker, folder) if r["status"] != "pass"]
    assert "sec3_5-renormalize-values" in failing


def test_check_names_the_cause_and_the_line_inside_forward_where_the_computation_departs(checker, tmp_path):
    """The mask computed but never applied (masked_fill, not masked_fill_): the cause named with
    its hint, and the departing step at the line in forward, with its code (not the class line)."""
    from ch3_checks import Messages

    module = "sec3_5_causal_attention"
    folder = _edited(tmp_path, module, "attn_scores.masked_fill_(", "attn_scores.masked_fill(")
    lines = (folder / f"{module}.py").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, start=1) if "attn_scores.masked_fill(self.mask" in text)
    t = Messages("en")
    failing = [r for r in statuses(checker, folder) if r["status"] != "pass"]
    named = [r for r in failing if r.get("cause_id") == "mask-not-applied"]
    assert named, [(r["key"], r.get("cause_id")) for r in failing]
    first = named[0]
    assert t("hints.mask-not-applied") in first["cause"]
    assert Path(first["place"][0]).name == f"{module}.py" and first["place"][1] == line
    assert "attn_scores.masked_fill(" in first["departs_code"] and "forward" in first["departs"]


def test_check_expected_holds_only_the_public_probes_values(bundle):
    """check_expected.json is values of the public probes' fixed inputs: the reference's, known
    mistakes' and the reference's intermediate ones; no hidden test's name, no code."""
    document = json.loads((bundle / "check_expected.json").read_text(encoding="utf-8"))
    sys.path.insert(0, str(bundle))
    try:
        values = importlib.import_module("ch3_check_values")
        assert set(document["probes"]) == set(values.PROBES)
    finally:
        sys.path.remove(str(bundle))
        forget_public_checks()
    text = json.dumps(document)
    hidden = {
        node.name
        for file in (ROOT / "grader" / "suites").rglob("test_*.py")
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    assert hidden and not [name for name in hidden if name in text]
    assert "def " not in text and "import " not in text


@pytest.mark.parametrize("what", ["zh-bundle", "nbgrader-release"])
def test_what_students_get_holds_no_hidden_test_or_solution_code(what, tmp_path):
    """The Chinese bundle and the nbgrader course's student version (its release folder) ship the
    public checks and their expected values, never the hidden suites or the reference's code."""
    if what == "zh-bundle":
        shipped = tmp_path / "bundle"
        subprocess.run(
            [sys.executable, "-m", "grader", "release", str(shipped), "--lang", "zh"],
            check=True,
            cwd=ROOT,
            capture_output=True,
            timeout=300,
        )
        assert (shipped / "check_expected.json").is_file()
    else:
        pytest.importorskip("nbgrader")
        from grader.classroom.nbgrader_course import create_course

        create_course(tmp_path / "course", lang="en")
        source, shipped = tmp_path / "course" / "source", tmp_path / "release"
        for path in source.rglob("*"):  # the files beside the notebook (its solution cells stay the instructor's)
            if path.is_file() and path.suffix != ".ipynb":
                (shipped / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, shipped / path.relative_to(source))
        assert list(shipped.rglob("check_expected.json")) and list(shipped.rglob("ch3_checks.py"))
    assert leaks(shipped) == []


def test_check_names_every_missing_package_in_one_message_torch_first(bundle, tmp_path):
    """Without site-packages (-S) neither torch nor jinja2 imports: one message names both, torch
    first, and says how to install them; no traceback."""
    folder = solutions_as_submission(tmp_path / "mine")
    done = subprocess.run(
        [sys.executable, "-S", "check.py", str(folder), "--lang", "en"],
        cwd=bundle,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "check.py needs torch and jinja2, which this Python does not have. Install them as README.md "
        "of this folder says (for example: pip install torch jinja2)."
    )


def _failing_sections(out: str) -> set[str]:
    """The sections of check.py's report with a check that fails (✘)."""
    failing, section = set(), ""
    for line in out.splitlines():
        if line and not line.startswith(" "):
            section = line
        elif line.strip().startswith("✘"):
            failing.add(section)
    return failing


def test_check_charges_a_mistake_where_the_grader_does(bundle, tmp_path):
    """check.py applies the grader's policy (docs/grading-policy.md), so its sections fail where the
    report's lose points: bob's 3.4 mistake costs nothing in Exercise 3.1; dave's syntax error in 3.5
    costs 3.5, the wrapper and Exercise 3.2, not MultiHeadAttention or Exercise 3.3; a mask never
    applied costs 3.5 only; a MultiHeadAttention returning zeros costs 3.6 only."""
    from tests.test_grading_policy import EDITS, _submission

    titles = {
        "3.3": "3.3 Attention without trainable weights",
        "3.4": "3.4 Self-attention with trainable weights",
        "3.5": "3.5 Causal attention",
        "3.6": "3.6 Multi-head attention",
        "ex3.2": "Exercise 3.2 Returning two-dimensional embedding vectors",
    }
    bob = _check(bundle, ROOT / "examples" / "class" / "bob").stdout
    assert _failing_sections(bob) == {titles["3.3"], titles["3.4"]}, bob
    dave = _check(bundle, ROOT / "examples" / "class" / "dave").stdout
    assert _failing_sections(dave) == {titles["3.5"], titles["3.6"], titles["ex3.2"]}, dave
    assert all("MultiHeadAttentionWrapper" in line for line in dave.splitlines() if "✘ MultiHead" in line), dave
    expected = {"mask-not-applied": {titles["3.5"]}, "zeros-mha": {titles["3.6"]}}
    for name, sections in expected.items():
        _submission(tmp_path / name, "pytorch", EDITS["pytorch"][name])
        out = _check(bundle, tmp_path / name).stdout
        assert _failing_sections(out) == sections, out
