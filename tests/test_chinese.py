"""Chinese throughout: with --lang zh, everything a Chinese student reads is Chinese prose in the
book's Chinese-edition terms (templates/i18n/glossary-zh.toml), with identifiers and code in English.

- the stubs' Chinese edition (exercises/zh/, exercises/mindspore/zh/): the same code as the English
  stubs, every docstring and NotImplementedError message Chinese prose;
- the zh nbgrader course's notebook: every markdown cell (section intros, instructions) and the
  comments of its test cells;
- the zh bundle: its README files, its stubs, and check.py's report on a buggy submission;
- every message of the zh catalogues: the book's words for its terms, never a word it does not use.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib

import pytest

from grader.i18n import TEMPLATES_DIR, Catalog, _load
from tests.conftest import MODULES, ROOT
from tests.test_reports import leaf_keys

GLOSSARY = tomllib.loads((TEMPLATES_DIR / "i18n" / "glossary-zh.toml").read_text(encoding="utf-8"))["terms"]
CJK = re.compile(r"[\u4e00-\u9fff]")
# Words that are names, not English prose: the libraries and tools, the two terms the book keeps in
# English (softmax, dropout), and the API names the texts mention without quoting them as code.
NAMES = {"softmax", "dropout", "none", "true", "false", "numpy", "jinja2", "pip", "python", "torch", "mindspore"}
NAMES |= {"triu", "tril", "diagonal", "view", "transpose", "contiguous", "reshape", "cat", "eval", "train"}
NAMES |= {"forward", "construct", "ops", "keepdim", "keepdims", "axis", "dim", "bias", "nan", "inf"}
STUBS = [ROOT / "grader" / "exercises" / "zh", ROOT / "grader" / "exercises" / "mindspore" / "zh"]


def english_words(text: str) -> list[str]:
    """The English prose words of a text: code (fenced blocks, backtick spans, calls, dotted and
    snake_case names, the parameter names a docstring lists), quoted examples ("Your journey starts
    with one step") and capitalised names (PyTorch, GPT, Cell) are not prose."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"^\s*[\w、]+：", " ", text, flags=re.M)  # a parameter's name in a docstring's list
    text = re.sub(r"``.*?``|`[^`\n]*`", " ", text)
    text = re.sub(r'"[^"\n]*"', " ", text)
    for _ in range(3):  # calls, nested ones too
        text = re.sub(r"[\w.]+\([^()\n]*\)", " ", text)
    words = re.findall(r"[A-Za-z][\w.'-]*", text)
    return [
        w
        for w in words
        if len(w) >= 3 and not re.search(r"[_\d.]|[a-z][A-Z]|^[A-Z]", w) and w.lower().strip("'-") not in NAMES
    ]


def assert_chinese_prose(text: str, where: str) -> None:
    assert CJK.search(text), f"{where}: no Chinese: {text[:80]!r}"
    assert english_words(text) == [], f"{where}: English prose {english_words(text)[:8]} in {text[:120]!r}"
    wrong = [word for spec in GLOSSARY.values() for word in spec.get("avoid", []) if word in text]
    assert wrong == [], f"{where}: not the book's terms: {wrong}"


def test_the_prose_detector_finds_english_and_passes_chinese_with_code():
    assert english_words("第 3.5 节：请把每个 ``raise NotImplementedError(...)`` 替换为你的实现。") == []
    assert english_words('例如书中 "Your journey starts with one step" 的 `torch.tril` 和 nn.Linear(3, 2)') == []
    assert english_words("Section 3.5: hiding future words") == ["hiding", "future", "words"]
    assert english_words("第 3.5 节 Replace each raise with your code") == ["each", "raise", "with", "your", "code"]


# -- the glossary --------------------------------------------------------------------------------------


def test_the_glossary_lists_the_books_terms():
    for term, spec in GLOSSARY.items():
        assert spec["zh"] and all(CJK.search(word) for word in spec["zh"]), term
    for term, word in [
        ("attention weight", "注意力权重"),
        ("context vector", "上下文向量"),
        ("causal attention", "因果注意力"),
        ("multi-head attention", "多头注意力"),
        ("mask", "掩码"),
        ("token", "词元"),
    ]:
        assert word in GLOSSARY[term]["zh"], term


def _term(term: str) -> re.Pattern:
    return re.compile(r"\b" + re.escape(term).replace(r"\ ", r"[\s-]+") + r"(s|es)?\b", re.I)


def test_every_chinese_message_says_the_books_words():
    english, chinese = Catalog("en"), Catalog("zh")
    missing, wrong = [], []
    for key in sorted(leaf_keys(_load("zh"))):
        en, zh = english.t(key), chinese.t(key)
        for term, spec in GLOSSARY.items():
            if spec.get("required") and _term(term).search(en) and not any(word in zh for word in spec["zh"]):
                missing.append(f"{key}: {term}")
            wrong += [f"{key}: {word}" for word in spec.get("avoid", []) if word in zh]
    assert missing == [] and wrong == []


# -- the stubs -------------------------------------------------------------------------------------------


def _texts(source: str) -> list[tuple[str, str]]:
    """(where, text) of every docstring and NotImplementedError message of a stub."""
    tree, found = ast.parse(source), []
    for node in ast.walk(tree):
        doc = (
            ast.get_docstring(node, clean=True)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
            else None
        )
        if doc:
            found.append((getattr(node, "name", "module"), doc))
        raised = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(raised, ast.Call) and raised.args and isinstance(raised.args[0], ast.Constant):
            found.append(("raise", raised.args[0].value))  # a stub's message (a solution's may be an f-string)
    return found


def _code(source: str) -> str:
    """The stub's code without its docstrings and NotImplementedError messages."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            node.body = body[1:] or [ast.Pass()]
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            node.exc.args = []
    return ast.dump(tree)


@pytest.mark.parametrize("folder", STUBS, ids=["pytorch", "mindspore"])
def test_the_chinese_stubs_are_the_same_code_in_chinese_prose(folder):
    assert {p.stem for p in folder.glob("*.py")} == set(MODULES)
    for module in MODULES:
        source = (folder / f"{module}.py").read_text(encoding="utf-8")
        english = (folder.parent / f"{module}.py").read_text(encoding="utf-8")
        assert _code(source) == _code(english), module  # what the grader imports is the same
        texts = _texts(source)
        assert len(texts) == len(_texts(english)), module
        for where, text in texts:
            assert_chinese_prose(text, f"{folder.name}/{module}.py {where}")
    assert_chinese_prose((folder / "README.md").read_text(encoding="utf-8"), f"{folder}/README.md")


# -- the nbgrader course -------------------------------------------------------------------------------


def test_the_chinese_course_notebook_is_chinese_prose(tmp_path):
    from grader.classroom.nbgrader_course import create_course

    notebook = json.loads(create_course(tmp_path / "course", lang="zh").read_text(encoding="utf-8"))
    markdown = [cell for cell in notebook["cells"] if cell["cell_type"] == "markdown"]
    assert len(markdown) == 8  # the title, then one introduction per section
    for index, cell in enumerate(markdown):
        assert_chinese_prose("".join(cell["source"]), f"markdown cell {index + 1}")
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if cell["metadata"].get("nbgrader", {}).get("grade"):  # a test cell: its comments
            for line in source.splitlines():
                if line.startswith("#"):
                    assert_chinese_prose(line, "a test cell's comment")
        elif cell["metadata"].get("nbgrader", {}).get("solution"):  # a solution cell: its docstrings
            for where, text in _texts(source):
                if where != "raise":
                    assert_chinese_prose(text, f"solution cell {where}")
    config = (tmp_path / "course" / "nbgrader_config.py").read_text(encoding="utf-8")
    stub = json.dumps("# " + Catalog("zh").t("classroom.nbgrader.code-stub"))[1:-1]
    assert stub in config  # what nbgrader writes into the solution cells


# -- the bundle and check.py ---------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["pytorch", "mindspore"])
def test_the_chinese_bundle_is_chinese_prose(tmp_path, framework):
    from grader.classroom.release import write_release

    write_release(tmp_path / "bundle", lang="zh", framework=framework)
    for readme in ("README.md", "exercises/README.md"):
        assert_chinese_prose((tmp_path / "bundle" / readme).read_text(encoding="utf-8"), readme)
    for module in MODULES:
        for where, text in _texts((tmp_path / "bundle" / "exercises" / f"{module}.py").read_text(encoding="utf-8")):
            assert_chinese_prose(text, f"{module}.py {where}")


def test_check_py_reports_a_buggy_submission_in_chinese(tmp_path):
    from grader.classroom.release import write_release

    write_release(tmp_path / "bundle", lang="zh")
    run = subprocess.run(
        [sys.executable, str(tmp_path / "bundle" / "check.py"), str(ROOT / "examples" / "class" / "carol")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr
    report = run.stdout
    assert "因果注意力" in report and Catalog("zh").t("misconceptions.mask-includes-diagonal.title") in report
    prose = [line for line in report.splitlines() if line.strip() and not line.startswith(" " * 10)]  # not code
    for line in prose[3:]:  # after the title, the introduction and the folder's path
        text = re.sub(r"^\s*([✔✘…]|从这里开始 ->)\s*", "", line)
        text = re.sub(r"^[^：\n]*\)(\[[\d, ]+\])?：", "", text)  # the call a value check shows, before its colon
        if CJK.search(text):
            assert english_words(text) == [], line
