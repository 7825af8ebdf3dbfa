"""The kit's module names say what each module is: no two share a name or differ by one letter
(`channel` and `channels`, two `stages`), so that a newcomer who looks for one never opens the
other. The one exception is on purpose: a family of modules with one per section of the chapter
(and one for the framework's own traps) in probes/, the diagnosis's patterns/ and variants/."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
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


# The kit's layers, lowest first: a module imports only from its own package (or diagnosis room)
# or from a lower layer, so no package imports one above it and no two packages import each other
# (two units of one layer may not import each other either). Within the diagnosis, its rooms are
# layered too: reading the source and the trace, then walking the student's computation, then the
# catalogue, then the diagnosis itself (its top-level modules). A new package or top-level module
# takes its place here.
LAYERS = (
    ("__init__",),  # the package itself (for its folder): it imports nothing
    ("sections", "resources", "stand_ins"),  # the sections' manifest; the kit's data files; stand-ins for broken imports
    ("records", "i18n", "quick_exit", "fingerprint"),
    ("lms",),  # each LMS's names and grade import (standard library and records only)
    ("intake",),
    ("probes",),
    ("frameworks",),
    ("sandbox",),
    ("probe_outputs",),
    ("reference_code",),
    ("suites",),
    ("diagnosis.source", "diagnosis.trace"),
    ("diagnosis.walk",),
    ("diagnosis.catalogue",),
    ("diagnosis",),
    ("answer_key",),
    ("report",),
    ("run",),
    ("classroom",),
    ("commands",),
    ("cli",),
    ("__main__",),
)


def unit(module: str) -> str:
    """The layered unit a dotted module under grader belongs to (`grader.diagnosis.walk.search` ->
    "diagnosis.walk", `grader.report.sentences` -> "report")."""
    parts = module.split(".")[1:]
    if parts[:1] == ["diagnosis"] and len(parts) > 2 and f"diagnosis.{parts[1]}" in _LEVEL:
        return f"diagnosis.{parts[1]}"
    return parts[0] if parts else "__init__"


DATA = ("templates", "exercises")  # the folders of files the kit ships to students (grader/resources.py)
_LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def imports(root: Path) -> Iterator[tuple[str, str]]:
    """(module, imported module) for every import of grader's own modules under ROOT/grader, lazy
    ones inside functions included (`from grader.x import y` imports `grader.x.y` when that is a
    module, else `grader.x`)."""
    modules = {
        _dotted(path.relative_to(root)): path
        for path in (root / "grader").rglob("*.py")
        if path.relative_to(root / "grader").parts[0] not in DATA  # what students get: not the kit's code
    }
    for module, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            yield from ((module, target) for target in targets if target.split(".")[0] == "grader")


def _dotted(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def upward(root: Path) -> set[tuple[str, str]]:
    """The imports under ROOT/grader that run up the layers (or into a unit LAYERS does not know)."""
    found = set()
    for module, target in imports(root):
        source, wanted = unit(module), unit(target)
        if source != wanted and _LEVEL.get(wanted, len(LAYERS)) >= _LEVEL.get(source, -1):
            found.add((module, target))
    return found


def test_layers_import_one_way():
    assert len(list(imports(ROOT))) > 300
    assert upward(ROOT) == set()


def test_an_upward_import_is_seen(tmp_path):
    files = {
        "grader/__init__.py": "",
        "grader/report/__init__.py": "",
        "grader/report/writers.py": "from grader.classroom.textsafe import spreadsheet_cell\n",
        "grader/classroom/__init__.py": "",
        "grader/classroom/textsafe.py": "from grader.report import writers\n",
        "grader/diagnosis/__init__.py": "",
        "grader/diagnosis/walk/__init__.py": "",
        "grader/diagnosis/walk/search.py": "def f():\n    from grader.diagnosis import blame\n",
        "grader/diagnosis/blame.py": "import grader.diagnosis.walk.search\n",
        "grader/intake/__init__.py": "",
        "grader/intake/files.py": "from grader import report\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert upward(tmp_path) == {
        ("grader.report.writers", "grader.classroom.textsafe"),
        ("grader.diagnosis.walk.search", "grader.diagnosis.blame"),
        ("grader.intake.files", "grader.report"),
    }
