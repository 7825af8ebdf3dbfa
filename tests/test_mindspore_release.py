"""`grade release --framework mindspore`: the MindSpore student bundle and its self-check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")

from tests.conftest import MODULES, ROOT
from tests.test_release import leaks


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("ms-release") / "bundle"
    subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out), "--framework", "mindspore"],
        check=True,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    return out


def run_check(bundle, *args):
    return subprocess.run(
        [sys.executable, "check.py", *args], cwd=bundle, capture_output=True, text=True, timeout=600, encoding="utf-8"
    )


def test_the_bundle_holds_the_mindspore_stubs_and_nothing_secret(bundle):
    for module in MODULES:
        source = (bundle / "exercises" / f"{module}.py").read_text(encoding="utf-8")
        assert source == (ROOT / "grader" / "exercises" / "mindspore" / f"{module}.py").read_text(encoding="utf-8")
    assert "nn.Cell" in (bundle / "exercises" / "README.md").read_text(encoding="utf-8")
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert "MindSpore 2.10" in readme and "classroom." not in readme  # every catalogue key rendered
    assert (
        "mindspore.set_seed(123)"
        in json.loads((bundle / "check_messages.json").read_text())["en"]["items.sec3_4-v1-book"]
    )
    assert leaks(bundle) == []
    assert not any(p.name in {"suites", "probes", "solutions", "frameworks"} for p in bundle.rglob("*"))


def test_the_self_check_says_where_to_start_on_the_stubs(bundle):
    done = run_check(bundle)
    assert done.returncode == 1
    assert "NotImplementedError" in done.stdout and "✔" not in done.stdout


def test_the_self_check_passes_the_reference_and_names_the_traps_of_the_example(bundle, tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    for path in (ROOT / "solutions" / "mindspore").glob("*.py"):
        if path.name != "__init__.py":
            (reference / path.name).write_text(
                re.sub(r"^from \.(\w+) import", r"from \1 import", path.read_text(), flags=re.M)
            )
    done = run_check(bundle, str(reference))
    assert done.returncode == 0, done.stdout
    mei = shutil.copytree(ROOT / "examples" / "mindspore-class" / "mei", tmp_path / "mei")
    done = run_check(bundle, str(mei), "--lang", "zh")
    assert done.returncode == 1
    for telltale in ("unexpected keyword argument 'dim'", "'keep_prob' must be", "has no attribute 'eval'", "自检"):
        assert telltale in done.stdout, telltale
