"""What the sandbox hides: the kit's files, but never the interpreter the workers need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.records import MODULES
from grader.sandbox.mounts import hide_targets as _hide_targets
from tests.conftest import ROOT, solutions_as_submission


def test_a_venv_inside_the_repository_stays_visible_and_the_rest_is_hidden(tmp_path):
    for folder in ("repo/grader", "repo/solutions", "repo/.venv/bin", "repo/.venv/lib/site-packages/solutions"):
        (tmp_path / folder).mkdir(parents=True)
    installed_key = tmp_path / "repo/.venv/lib/site-packages/solutions"
    hidden = _hide_targets([tmp_path / "repo", installed_key], keep=[tmp_path / "repo/.venv"])
    assert set(hidden) == {tmp_path / "repo/grader", tmp_path / "repo/solutions", installed_key}


def test_a_kept_folder_given_to_hide_is_left_alone(tmp_path):
    (tmp_path / "venv/bin").mkdir(parents=True)
    assert _hide_targets([tmp_path / "venv"], keep=[tmp_path / "venv"]) == []


def test_python_m_grader_from_a_venv_that_is_a_symbolic_link_grades_correct_code(tmp_path):
    """The workers start the interpreter at a path the sandbox shows: bubblewrap mounts the
    interpreter's folders by their real paths, so `<link>/.venv/bin/python` must not be what
    they run (every check would fail with "the grading worker died"). A link to the kit's own
    venv: nothing is copied."""
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix):
        pytest.skip("the tests do not run in a venv")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / ".venv").symlink_to(venv.resolve(), target_is_directory=True)
    python = tmp_path / "linked" / ".venv" / "bin" / Path(sys.executable).name
    submission = solutions_as_submission(tmp_path / "student")
    # only sec3_3: its six probes are enough to show whether a worker starts at all
    for module in MODULES[1:]:
        (submission / f"{module}.py").unlink()
    done = subprocess.run(
        [str(python), "-m", "grader", str(submission), "--out", str(tmp_path / "out"), "--quiet", "--jobs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    section = next(section for section in results["sections"] if section["id"] == "3.3")
    assert section["score"] == section["max_score"] > 0, json.dumps(results["tests"])[:2000]
