"""`grade release`: the student bundle holds stubs, README and public checks, and nothing secret."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODULES, ROOT, solutions_as_submission

SECRET_ROOTS = [ROOT / "grader" / "suites", ROOT / "grader" / "probes", ROOT / "grader" / "diagnosis",
                ROOT / "solutions"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "bundle"
    subprocess.run([sys.executable, "-m", "grader", "release", str(out)], check=True, cwd=ROOT,
                   capture_output=True, timeout=120)
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
    files = {str(f.relative_to(bundle)): _normal(f.read_text(encoding="utf-8", errors="replace"))
             for f in bundle.rglob("*") if f.is_file()}
    found = []
    for where, snippet in secret_snippets():
        for name, text in files.items():
            if snippet and snippet in text:
                found.append(f"{where} in {name}")
    for name in files:
        if Path(name).name.startswith("test_") or name.startswith(("grader", "solutions")):
            found.append(f"hidden-looking file {name}")
    return found


def test_bundle_layout(bundle):
    names = {str(f.relative_to(bundle)) for f in bundle.rglob("*") if f.is_file()}
    assert {"README.md", "check.py", "check_messages.json", "check_report.txt.j2", "exercises/README.md"} <= names
    assert {f"exercises/{m}.py" for m in MODULES} <= names
    for module in MODULES:
        assert (bundle / "exercises" / f"{module}.py").read_bytes() == (ROOT / "exercises" / f"{module}.py").read_bytes()
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert "python check.py" in readme and "{" not in readme


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
    found = leaks(copy)
    assert any("solutions/sec3_5_causal_attention.py:masked_attention_weights" in f for f in found)
    assert any(f"grader/suites/hidden/{suite.name}" in f for f in found)


def _check(bundle: Path, folder: Path | None = None, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(bundle / "check.py"), *([str(folder)] if folder else []), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=bundle,
                          env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"})


def test_check_on_the_stubs_says_where_to_start(bundle):
    result = _check(bundle)
    assert result.returncode == 1
    assert "0 of 19 checks pass" in result.stdout
    assert result.stdout.count("Start here") == 1
    assert "Next: each row of softmax_naive(x) sums to 1" in result.stdout


def test_check_on_correct_code_passes_and_speaks_chinese(bundle, tmp_path):
    folder = solutions_as_submission(tmp_path / "mine")
    result = _check(bundle, folder)
    assert result.returncode == 0, result.stdout
    assert "19 of 19 checks pass" in result.stdout
    result = _check(bundle, folder, "--lang", "zh")
    assert result.returncode == 0 and "19 项检查中通过了 19 项" in result.stdout and "因果注意力" in result.stdout


def test_check_reports_a_bug_with_its_location(bundle, tmp_path):
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
    assert "each row of softmax_naive(x) sums to 1  [not yet]" in result.stdout
    assert "(in sec3_5_causal_attention.py, line" in result.stdout
    assert "Next: each row of softmax_naive(x) sums to 1" in result.stdout
