"""What the platforms share: the answer-key exposure check, the instructor's protection lines, the
kit's files and requirements, and text made safe for the platforms' JSON (grader/classroom/
deployment.py, textsafe.py)."""

from __future__ import annotations

import json
import os
import stat
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grader.classroom.deployment as deployment
import grader.sandbox.exposure as exposure
from grader.classroom.deployment import answer_key_exposure, protection_lines, readable_by_others, runtime_requirements
from grader.classroom.kit_wheel import package_files
from grader.i18n import Catalog
from grader.records import IntegrityNote
from grader.report.textsafe import clean, clip, fit_json, json_size
from tests.conftest import ROOT
from tests.platforms import open_root, remove_root


@pytest.fixture
def kit():
    root = open_root("attention-kit-exposure-")
    kit = root / "kit"
    (kit / "solutions").mkdir(parents=True)
    (kit / "grader" / "suites" / "hidden").mkdir(parents=True)
    (kit / "README.md").write_text("public\n")
    (kit / "solutions" / "sec3_5_causal_attention.py").write_text("answer\n")
    (kit / "grader" / "suites" / "hidden" / "test_x.py").write_text("hidden\n")
    for path in [kit, *kit.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield kit
    remove_root(root)


def test_a_readable_kit_is_named_by_a_file_of_its_answer_key(kit):
    assert readable_by_others(kit) == "solutions/sec3_5_causal_attention.py"
    assert answer_key_exposure(kit) == [IntegrityNote("deploy.kit-readable", "solutions/sec3_5_causal_attention.py")]


def test_what_keeps_the_kit_out_of_reach(kit):
    (kit / "solutions").chmod(0o750)  # a folder others cannot search hides what is in it
    assert readable_by_others(kit) == "grader/suites/hidden/test_x.py"
    (kit / "grader" / "suites" / "hidden" / "test_x.py").chmod(0o640)
    assert readable_by_others(kit) is None and answer_key_exposure(kit) == []  # README.md is no secret
    (kit / "grader" / "suites" / "hidden" / "test_x.py").chmod(0o644)
    kit.chmod(0o700)
    assert readable_by_others(kit) is None
    kit.chmod(0o755)
    kit.parent.chmod(0o711)  # searchable but not listable: still reachable by its path
    assert readable_by_others(kit) == "grader/suites/hidden/test_x.py"
    kit.parent.chmod(0o700)
    assert readable_by_others(kit) is None


def test_a_kit_inside_site_packages_is_named(kit, monkeypatch):
    monkeypatch.setattr(exposure, "_site_packages", lambda: [kit.parent])
    kit.chmod(0o700)
    assert [n.kind for n in answer_key_exposure(kit)] == ["deploy.kit-in-site-packages"]


def test_the_checkout_an_nbgrader_course_grades_with_is_checked_the_same_way():
    """nbgrader's GradeWithKit grades with the kit installed from this checkout: bubblewrap hides it
    from the sandbox, and without bubblewrap its file permissions are all that is left. The check
    reports precisely which of those this machine has."""
    readable = readable_by_others(ROOT)
    kinds = [n.kind for n in answer_key_exposure(ROOT)]
    assert ("deploy.kit-readable" in kinds) == (readable is not None)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_protection_lines_say_each_missing_protection(lang):
    catalog = Catalog(lang)
    assert protection_lines([], [], catalog) == [catalog.t("deploy.all-protections")]
    lines = protection_lines(
        [IntegrityNote("sandbox.no-bubblewrap", "bwrap")],
        [IntegrityNote("deploy.kit-readable", "solutions/x.py")],
        catalog,
    )
    assert len(lines) == 2 and "solutions/x.py" in lines[1]
    assert all(line.startswith(catalog.t("deploy.protection-missing", what="").rstrip("：: ")) for line in lines)


def test_the_kit_shipped_to_a_platform_and_its_requirements():
    names = [name for _, name in package_files()]
    assert "solutions/sec3_5_causal_attention.py" in names and "grader/suites/hidden/pytest.ini" in names
    assert any(name.startswith("grader/suites/hidden/test_") for name in names)
    assert not any(
        "__pycache__" in name
        or name.endswith(".pyc")
        or "/.cache/" in name
        or not name.startswith(("grader/", "solutions/"))
        for name in names
    )
    with open(ROOT / "pyproject.toml", "rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    assert runtime_requirements() == [d for d in dependencies if not d.startswith("torch")]


def test_locked_folders_stay_locked(tmp_path):
    (tmp_path / "platform").mkdir()
    deployment.restrict_to_owner(tmp_path / "platform")
    assert stat.S_IMODE(os.stat(tmp_path / "platform").st_mode) == 0o700
    (tmp_path / "link").symlink_to(tmp_path / "platform")
    (tmp_path / "platform").chmod(0o755)
    deployment.restrict_to_owner(tmp_path / "link")  # a link is not followed
    assert stat.S_IMODE(os.stat(tmp_path / "platform").st_mode) == 0o755


_ANY = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=200)


@settings(max_examples=200, deadline=None)
@given(_ANY, st.integers(0, 300))
def test_clean_and_clip_give_encodable_visible_text(text, limit):
    cleaned = clean(text)
    cleaned.encode("utf-8")
    assert not any(ord(c) < 32 and c not in "\n\t" for c in cleaned)
    assert len(clip(text, limit)) <= max(limit, 0)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(_ANY, st.integers(0, 20_000)), min_size=1, max_size=80), st.integers(20_000, 1_000_000))
def test_fit_json_keeps_scores_and_tests_within_any_limit(pieces, limit):
    document = {
        "score": 0.5,
        "message": "m" * 5000,
        "output": "o" * 500_000,
        "images": [{"url": "data:image/svg+xml;base64," + "A" * 100_000}],
        "tests": [
            {
                "name": f"t{i}",
                "points": 1.0,
                "max_points": 2.0,
                "output": clean(text * count),
                "message": clean(text),
                "images": [{"url": "data:,x"}],
            }
            for i, (text, count) in enumerate(pieces)
        ],
    }
    fitted = fit_json(document, limit)
    assert json_size(fitted) <= limit
    assert fitted["score"] == 0.5 and [t["name"] for t in fitted["tests"]] == [f"t{i}" for i in range(len(pieces))]
    assert json.loads(json.dumps(fitted)) == fitted
