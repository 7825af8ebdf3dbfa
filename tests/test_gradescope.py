"""The Gradescope autograder zip, run locally on a fake /autograder layout."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from grader.classroom.gradescope import locate_submission, run, to_gradescope
from grader.i18n import Catalog
from tests.conftest import ROOT, solutions_as_submission


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs") / "autograder.zip"
    subprocess.run([sys.executable, "-m", "grader", "gradescope", str(out)], check=True, cwd=ROOT,
                   capture_output=True, timeout=300)
    return out


def test_zip_holds_setup_run_autograder_and_the_kit(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        modes = {name: archive.getinfo(name).external_attr >> 16 for name in ("setup.sh", "run_autograder")}
    assert {"setup.sh", "run_autograder", "kit/pyproject.toml", "kit/grader/runner.py",
            "kit/grader/classroom/gradescope.py", "kit/solutions/sec3_5_causal_attention.py"} <= names
    assert any(name.startswith("kit/grader/suites/hidden/test_") for name in names)
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
    assert "torch==2.13.0" in setup and "download.pytorch.org/whl/cpu" in setup
    assert all(mode & stat.S_IXUSR for mode in modes.values())


@pytest.fixture(scope="module")
def graded(autograder_zip, tmp_path_factory):
    """run_autograder from the zip, on a submission uploaded as a folder inside the upload:
    the solutions, except 3.3, which is the unimplemented stub."""
    root = tmp_path_factory.mktemp("autograder")
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    folder = solutions_as_submission(root / "submission" / "my-work")
    shutil.copy(ROOT / "exercises" / "sec3_3_simple_attention.py", folder / "sec3_3_simple_attention.py")
    (root / "submission" / "__MACOSX").mkdir()
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable}
    result = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8")), root


def test_results_json_has_gradescopes_fields(graded):
    results, _ = graded
    assert results["tests"]
    for test in results["tests"]:
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] == "visible"
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    assert results["output_format"] == "md" and results["output"]


def test_scores_follow_the_kits_grading(graded):
    results, root = graded
    kit = json.loads((root / "results" / "kit-report" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == kit["score"]
    sec3_3 = [t for t in results["tests"] if t["number"].startswith("sec3_3_simple_attention::")]
    others = [t for t in results["tests"] if not t["number"].startswith("sec3_3_simple_attention::")]
    assert sec3_3 and all(t["score"] == 0 and t["output"] for t in sec3_3)
    assert all(t["score"] == t["max_score"] for t in others)
    assert "NotImplementedError" in sec3_3[0]["output"]


def test_no_submission_and_grader_failure_still_write_results(tmp_path, monkeypatch):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "notes.txt").write_text("hello")
    result = run(tmp_path)
    written = json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8"))
    assert written == result
    assert result["score"] == 0 and "No Chapter 3 module" in result["output"]

    import grader.runner

    def broken(*args, **kwargs):
        raise RuntimeError("sandbox unavailable")

    monkeypatch.setattr(grader.runner, "grade", broken)
    (tmp_path / "submission" / "sec3_3_simple_attention.py").write_text("x = 1\n")
    result = run(tmp_path)
    assert result["score"] == 0 and "sandbox unavailable" in result["output"] and "grader" in result["output"]


def test_locate_submission_prefers_the_upload_itself(tmp_path):
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "sec3_5_causal_attention.py").write_text("")
    assert locate_submission(tmp_path) == tmp_path / "inner"
    (tmp_path / "sec3_3_simple_attention.py").write_text("")
    assert locate_submission(tmp_path) == tmp_path


def test_conversion_of_a_results_document():
    document = {"submission": "s", "score": 2.0, "max_score": 5.0, "sections": [], "integrity": [],
                "tests": [{"id": "sec3_5_causal_attention::test_a", "section": "3.5", "points": 2.0, "max_points": 2.0,
                           "status": "passed", "message": "", "misconception": None},
                          {"id": "sec3_5_causal_attention::test_b", "section": "3.5", "points": 0.0, "max_points": 3.0,
                           "status": "failed", "message": "values differ", "misconception": "mask-inverted"}]}
    result = to_gradescope(document, Catalog("en"), visibility="after_published")
    assert result["score"] == 2.0
    assert [t["score"] for t in result["tests"]] == [2.0, 0.0]
    assert [t["max_score"] for t in result["tests"]] == [2.0, 3.0]
    assert result["tests"][1]["status"] == "failed"
    assert "values differ" in result["tests"][1]["output"] and "mask" in result["tests"][1]["output"]
    assert {t["visibility"] for t in result["tests"]} == {"after_published"}
