"""The MindSpore bundle's check.py: the PyTorch bundle's runner with the MindSpore check list, so it
reads .py files, per-module notebooks and one chapter notebook by the grader's rules, and each
failing check says what was expected and what came, in MindSpore terms, with a hint for a trap."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mindspore")

from tests.conftest import MODULES, ROOT, mindspore_solutions_as_submission
from tests.test_release import (
    BOOK_ORDER,
    bundle_checker,
    chapter_notebook,
    code_cell,
    notebook,
    notebook_layouts,
    write_layout,
)

MS_SOLUTIONS = ROOT / "solutions" / "mindspore"
MS_PREAMBLE = "import mindspore\nfrom mindspore import nn, ops"
ALL_PASS = "22 of 22 checks pass"
S33, S35, S36, E33 = (
    "sec3_3_simple_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_3_gpt2_attention",
)
MASK_BUFFER = """        self.register_buffer(
            "mask", ops.triu(ops.ones((context_length, context_length)), diagonal=1)
        )

    def construct"""
# MindSpore's traps, as edits of the reference: (module, old, new, the check list's hint for it)
TRAPS = {
    "dropout-keep-prob": (S35, "nn.Dropout(p=dropout)", "nn.Dropout(dropout)"),
    "dim-not-axis": (
        S33,
        "ops.softmax(attention_scores(inputs), axis=-1)",
        "ops.softmax(attention_scores(inputs), dim=-1)",
    ),
    "torch-api": (
        E33,
        "    return MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)",
        "    model = MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)\n    model.eval()\n    return model",
    ),
    "mask-trainable": (
        S36,
        MASK_BUFFER,
        "        import mindspore\n        self.mask = mindspore.Parameter("
        "ops.triu(ops.ones((context_length, context_length)), diagonal=1))\n\n    def construct",
    ),
}


def with_trap(name):
    def edit(module, code):
        target, old, new = TRAPS[name] if name else (None, "", "")
        if module != target:
            return code
        assert old in code, (name, module)
        return code.replace(old, new, 1)

    return edit


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("ms-check") / "bundle"
    subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out), "--framework", "mindspore"],
        check=True,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    return out


def run_check(bundle, *args, env=None):
    return subprocess.run(
        [sys.executable, "check.py", *map(str, args)],
        cwd=bundle,
        capture_output=True,
        text=True,
        timeout=600,
        encoding="utf-8",
        env=env,
    )


def hint(bundle, name, lang="en"):
    return json.loads((bundle / "check_messages.json").read_text(encoding="utf-8"))[lang][f"hints.{name}"]


def per_module_notebooks(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for module in MODULES:
        (folder / f"{module}.ipynb").write_text(
            json.dumps(notebook([code_cell((source / f"{module}.py").read_text())]))
        )
    return folder


def ms_chapter(source: Path, path: Path, edit=lambda module, code: code) -> Path:
    path = chapter_notebook(source, path, edit)
    document = json.loads(path.read_text())
    document["cells"][1] = code_cell(MS_PREAMBLE)
    path.write_text(json.dumps(document))
    return path


# -- check.py as a student runs it ----------------------------------------------------------------------


def test_the_reference_passes_in_per_module_notebooks_and_one_chapter_notebook(bundle, tmp_path):
    reference = mindspore_solutions_as_submission(tmp_path / "py")
    for target in (
        reference,
        per_module_notebooks(reference, tmp_path / "sections"),
        ms_chapter(reference, tmp_path / "chapter" / "ch3.ipynb"),
    ):
        done = run_check(bundle, target)
        assert done.returncode == 0 and ALL_PASS in done.stdout, done.stdout + done.stderr
        assert "is missing" not in done.stdout and done.stderr == ""


def test_a_leftover_ascend_device_target_costs_nothing_as_in_the_grader(bundle):
    done = run_check(bundle, ROOT / "examples" / "mindspore-class" / "port-style")
    assert done.returncode == 0 and ALL_PASS in done.stdout, done.stdout + done.stderr


def test_a_trap_in_a_chapter_notebook_fails_with_its_reason_its_cell_and_a_hint(bundle, tmp_path):
    reference = mindspore_solutions_as_submission(tmp_path / "py")
    chapter = ms_chapter(reference, tmp_path / "chapter" / "ch3.ipynb", with_trap("dropout-keep-prob"))
    out = run_check(bundle, chapter).stdout
    # the cells: markdown, imports, then the modules in book order: 3.5 is code cell 5 (markdown is not counted)
    assert re.search(
        r"Start here -> ValueError: For 'Dropout', the 'keep_prob' must be a number in range \(0, 1\], "
        r"but got 0\.0\. \(ch3\.ipynb, code cell 5, line \d+\) Hint: Write nn\.Dropout\(p=dropout\)",
        out,
    ), out
    assert "self.dropout = nn.Dropout(dropout)" in out
    # the next check broken by the same line says so rather than repeating it
    assert out.count("the 'keep_prob' must be") < 4 and "      The same as above.\n" in out
    assert re.search(
        r"== 0\)\.mean\(\): expected about 0\.1, got 0\.(8[5-9]|9[0-5])\d* \(ch3\.ipynb, code cell 5, line \d+\) Hint:",
        out,
    )  # keep_prob 0.1: 90 % dropped; where CausalAttention is
    assert "C++" not in out and "----" not in out  # MindSpore's call stack stays out: one line per reason
    assert "16 of 22 checks pass" in out


def test_traps_in_per_module_notebooks_speak_chinese(bundle, tmp_path):
    reference = mindspore_solutions_as_submission(tmp_path / "py")
    for name in ("dim-not-axis", "mask-trainable"):
        module, old, new = TRAPS[name]
        (reference / f"{module}.py").write_text((reference / f"{module}.py").read_text().replace(old, new, 1))
    out = run_check(bundle, per_module_notebooks(reference, tmp_path / "nb"), "--lang", "zh").stdout
    assert re.search(
        r"从这里开始 -> TypeError: softmax\(\) got an unexpected keyword argument 'dim'"
        rf"（{S33}\.ipynb 第 1 个代码单元格第 \d+ 行） 提示：" + re.escape(hint(bundle, "dim-not-axis", "zh")),
        out,
    ), out
    assert re.search(
        r"trainable_params\(\) if p\.shape == \(7, 7\)\]：期望「\[\]」，实际「\['mask'\]」"
        rf"（{S36}\.ipynb 第 1 个代码单元格第 \d+ 行） 提示：" + re.escape(hint(bundle, "mask-trainable", "zh")),
        out,
    ), out


def test_the_check_needs_no_torch_and_says_when_jinja2_or_mindspore_is_missing(bundle, tmp_path):
    hidden = tmp_path / "hidden"
    for name in ("torch", "jinja2"):
        (hidden / name).mkdir(parents=True)
        message = f"No module named {name!r}"
        (hidden / name / "__init__.py").write_text(f"raise ModuleNotFoundError({message!r}, name={name!r})")
    reference = mindspore_solutions_as_submission(tmp_path / "py")
    (hidden / "jinja2" / "__init__.py").rename(hidden / "jinja2" / "off.py")  # the real jinja2 comes first
    done = run_check(bundle, reference, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(hidden)})
    assert done.returncode == 0 and ALL_PASS in done.stdout, done.stdout + done.stderr  # no torch needed
    (hidden / "jinja2" / "off.py").rename(hidden / "jinja2" / "__init__.py")
    done = run_check(bundle, reference, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(hidden)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "check.py needs jinja2, which this Python does not have. Install it as README.md of this folder says "
        "(for example: pip install jinja2)."
    )
    (hidden / "jinja2" / "__init__.py").unlink()
    shutil.move(hidden / "torch", hidden / "mindspore")
    (hidden / "mindspore" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mindspore'\", name='mindspore')"
    )
    done = run_check(bundle, reference, "--lang", "zh", env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(hidden)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "check.py 需要 mindspore，但当前的 Python 中没有安装它。"
        "请按本文件夹 README.md 中的说明安装（例如：pip install mindspore）。"
    ), done.stderr


def test_every_hint_the_check_list_names_is_in_every_language(bundle):
    names = set()
    for node in ast.walk(ast.parse((bundle / "ch3_check_list.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg == "hint":  # hint="..." or hint="..." if ... else None
            names |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        elif isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["HINTS"]:
            names |= {hint for _, hint in ast.literal_eval(node.value)}
    assert names == {
        "dropout-keep-prob",
        "dim-not-axis",
        "torch-api",
        "mask-trainable",
        "weights-not-transposed",
        "mint-dropout-cpu",
    }
    messages = json.loads((bundle / "check_messages.json").read_text(encoding="utf-8"))
    for lang in ("en", "zh"):
        assert all(f"hints.{name}" in messages[lang] for name in names), lang
        assert messages[lang]["phrases.a-tensor"].endswith("mindspore.Tensor")


# -- in-process, on generated notebook layouts ----------------------------------------------------------


@pytest.fixture(scope="module")
def checker(bundle):
    """The MindSpore bundle's check.py as a module."""
    yield from bundle_checker(bundle, "ms_bundle_check")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=notebook_layouts(MS_SOLUTIONS), trap=st.sampled_from([None, *TRAPS]))
def test_any_notebook_layout_passes_the_reference_and_names_a_trap(checker, bundle, tmp_path_factory, layout, trap):
    from ch3_checks import Messages

    folder = tmp_path_factory.mktemp("ms-layout") / "nb"
    write_layout(folder, *layout, solutions=MS_SOLUTIONS, preamble=MS_PREAMBLE, edit=with_trap(trap))
    results, problems = checker.check_folder(folder, Messages("en"), tuple(BOOK_ORDER))
    assert problems == []
    failing = [r for r in results if r["status"] != "pass"]
    if trap is None:
        assert failing == [], [(r["key"], r["note"]) for r in failing]
        return
    assert failing and all(r["note"] for r in failing)
    module = TRAPS[trap][0]
    own = [r for r in failing if r["module"] == module]
    assert own and any(hint(bundle, trap) in r["note"] for r in own), [r["note"] for r in own]
    # each reason is expected-vs-actual, or an error located in the student's notebook
    assert all(
        ": expected " in r["note"] or re.search(r"\.ipynb, code cell \d+, line \d+\)", r["note"]) for r in own
    ), [r["note"] for r in own]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from([ValueError, TypeError, AttributeError, RuntimeError, SystemExit]),
    message=st.text(),
    trap=st.sampled_from(["", "the 'keep_prob' must be 0", "got an unexpected keyword argument 'dim'"]),
)
def test_any_error_of_the_students_code_is_one_line_and_a_trap_in_it_gets_its_hint(checker, kind, message, trap):
    """Whatever a student's code raises (MindSpore adds a C++ call stack on later lines), the reason
    is one line; the trap's hint is found when its words are on that line, and nothing else is."""
    from ch3_checks import hint_for, one_line

    line = one_line(kind(trap + message))
    assert line.startswith(kind.__name__) and len(line.splitlines()) == 1
    expected = {
        "": None,
        "the 'keep_prob' must be 0": "dropout-keep-prob",
        "got an unexpected keyword argument 'dim'": "dim-not-axis",
    }[trap]
    if trap and trap + message.split("\n")[0] in line and hint_for(message) is None:  # no other trap's words
        assert hint_for(line) == expected
    assert hint_for(line) in {None, "dropout-keep-prob", "dim-not-axis", "torch-api"}


def test_an_exception_that_cannot_be_printed_costs_only_its_check(checker, tmp_path):
    from ch3_checks import Messages

    folder = mindspore_solutions_as_submission(tmp_path / "mine")
    path = folder / f"{S33}.py"
    path.write_text(
        path.read_text().replace(
            "def softmax_naive(x):\n",
            "def softmax_naive(x):\n"
            "    class Odd(Exception):\n"
            "        def __str__(self):\n"
            "            raise RuntimeError('no')\n"
            "    raise Odd()\n",
            1,
        )
    )
    results, _ = checker.check_folder(folder, Messages("en"), (S33,))
    assert [r["status"] for r in results] == ["fail", "pass", "pass", "pass"]
    assert results[0]["note"].startswith(f"Odd ({S33}.py, line ")


def test_a_multi_head_attention_that_fails_for_every_input_does_not_pass_as_refusing(checker, tmp_path):
    from ch3_checks import Messages

    folder = mindspore_solutions_as_submission(tmp_path / "mine")
    path = folder / f"{S36}.py"
    path.write_text(
        path.read_text().replace("self.head_dim = d_out // num_heads", "self.head_dim = d_out // num_head", 1)
    )
    results, _ = checker.check_folder(folder, Messages("en"), (S36,))
    refuses = next(r for r in results if r["key"] == "sec3_6-mha-raises")
    assert refuses["status"] == "fail"
    assert refuses["note"].startswith(f"NameError: name 'num_head' is not defined ({S36}.py, line ")


def test_mint_dropout_which_has_no_cpu_kernel_gets_a_hint(checker, bundle, tmp_path):
    """mint.nn.Dropout fails on a CPU only when it drops ("The kernel DropoutExt unregistered."):
    the reason had no line of the student's code and no hint."""
    from ch3_checks import Messages

    folder = mindspore_solutions_as_submission(tmp_path / "mine")
    path = folder / f"{S35}.py"
    path.write_text(
        path.read_text()
        .replace("self.dropout = nn.Dropout(p=dropout)", "self.dropout = mint.nn.Dropout(p=dropout)")
        .replace("from mindspore import nn, ops", "from mindspore import mint, nn, ops")
    )
    results, _ = checker.check_folder(folder, Messages("zh"), (S35,))
    dropout = next(r for r in results if r["key"] == "sec3_5-dropout-keyword")
    assert dropout["status"] == "fail" and hint(bundle, "mint-dropout-cpu", "zh") in dropout["note"], dropout["note"]
