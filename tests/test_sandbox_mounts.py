"""What the sandbox hides: the kit's files, but never the interpreter the workers need."""

from __future__ import annotations

from grader.sandbox.mounts import hide_targets as _hide_targets


def test_a_venv_inside_the_repository_stays_visible_and_the_rest_is_hidden(tmp_path):
    for folder in ("repo/grader", "repo/solutions", "repo/.venv/bin", "repo/.venv/lib/site-packages/solutions"):
        (tmp_path / folder).mkdir(parents=True)
    installed_key = tmp_path / "repo/.venv/lib/site-packages/solutions"
    hidden = _hide_targets([tmp_path / "repo", installed_key], keep=[tmp_path / "repo/.venv"])
    assert set(hidden) == {tmp_path / "repo/grader", tmp_path / "repo/solutions", installed_key}


def test_a_kept_folder_given_to_hide_is_left_alone(tmp_path):
    (tmp_path / "venv/bin").mkdir(parents=True)
    assert _hide_targets([tmp_path / "venv"], keep=[tmp_path / "venv"]) == []
