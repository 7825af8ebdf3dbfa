"""The kit's module names say what each module is: no two share a name or differ by one letter
(`channel` and `channels`, two `stages`), so that a newcomer who looks for one never opens the
other. The one exception is on purpose: a family of modules with one per section of the chapter
(and one for the framework's own traps) in probes/, the diagnosis's patterns/ and variants/."""

from __future__ import annotations

import itertools
from pathlib import Path

from grader.intake.near_misses import distance
from grader.records import MODULES
from tests.conftest import ROOT

PER_SECTION = {*MODULES, "framework_traps", "__init__"}


def module_names(package: Path) -> list[Path]:
    """The modules under PACKAGE but the per-section families (the hidden suites are pytest's test
    files, named by section too) and the files students get (templates/, exercises/: data the kit ships,
    one edition per folder)."""
    return sorted(
        p
        for p in package.rglob("*.py")
        if "__pycache__" not in p.parts
        and "hidden" not in p.parts
        and p.stem not in PER_SECTION
        and p.relative_to(package).parts[0] not in ("templates", "exercises")
    )


def clashes(package: Path) -> set[tuple[str, str]]:
    """Pairs of modules under PACKAGE whose names are equal or one letter apart."""
    return {
        (str(a.relative_to(package)), str(b.relative_to(package)))
        for a, b in itertools.combinations(module_names(package), 2)
        if distance(a.stem, b.stem, limit=1) <= 1
    }


def test_no_two_modules_share_a_name_or_differ_by_one_letter():
    assert len(module_names(ROOT / "grader")) > 100
    assert clashes(ROOT / "grader") == set()


def test_a_clash_is_seen(tmp_path):
    for name in (
        "sandbox/channel.py",
        "classroom/channels.py",
        "run/stages.py",
        "diagnosis/stages.py",
        "sandbox/pool.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert clashes(tmp_path) == {
        ("classroom/channels.py", "sandbox/channel.py"),
        ("diagnosis/stages.py", "run/stages.py"),
    }
