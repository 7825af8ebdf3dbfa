"""The kit as another course installs it: a wheel built from the checkout's tracked files, installed
into a fresh virtual environment (its dependencies reach it through a .pth path line, tests/platforms.py;
the checkout is not importable there), run from a folder outside the checkout. Every command works,
and its reports and files are byte-identical to the checkout's.
"""

from __future__ import annotations

import filecmp
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.platforms import deps_only_python

pytestmark = pytest.mark.wheel

CHECKOUT_BIN = Path(sys.executable).parent


def _run(command: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _tracked() -> list[str]:
    """The checkout's files as a commit would hold them (tracked, and new ones not ignored)."""
    listed = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    names = subprocess.run(listed, cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in names if name and (ROOT / name).is_file() and not (ROOT / name).is_symlink()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The kit's wheel, built from a copy of the checkout's files."""
    base = tmp_path_factory.mktemp("build")
    source = base / "source"
    for name in _tracked():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(source)], base)
    (built,) = (base / "dist").glob("attention_kit-*.whl")
    return built


def test_the_wheel_holds_every_file_of_the_package(wheel):
    """Every file of grader/ and solutions/ a commit holds is in the wheel (package data included)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(n for n in _tracked() if n.startswith(("grader/", "solutions/")) and n not in names) == []
    metadata = zipfile.ZipFile(wheel).read("attention_kit-0.1.0.dist-info/METADATA").decode()
    assert all(field in metadata for field in ("License-Expression: Apache-2.0", "Classifier:", "Project-URL:"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The bin/ folder of a venv with the kit installed from its wheel."""
    base = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    python = deps_only_python(base / "venv")
    _run([*pip, "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel)], base)
    return python.parent


@pytest.fixture
def places(tmp_path) -> tuple[Path, Path]:
    """Two empty folders outside the checkout, with the same layout: one for each install."""
    return tmp_path / "wheel", tmp_path / "checkout"


def _same_tree(a: Path, b: Path) -> None:
    files_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    mismatch = filecmp.cmpfiles(a, b, files_a, shallow=False)[1:]
    assert mismatch == ([], [])


def test_the_wheel_holds_everything_the_kit_reads(installed):
    """The checkout is not what runs: the kit, its templates, catalogues, stubs and hidden suites'
    pytest.ini come from the installed package, with its version."""
    probe = (
        "import grader, importlib.metadata as m; from grader.resources import TEMPLATES_DIR, STUBS_DIR;"
        "print(grader.__file__); print(m.version('attention-kit'));"
        "print(all(p.is_file() for p in (TEMPLATES_DIR / 'i18n/zh/core.toml', STUBS_DIR / 'zh/README.md',"
        " TEMPLATES_DIR.parent / 'suites/hidden/pytest.ini')))"
    )
    where, version, present = _run([str(installed / "python"), "-s", "-c", probe], Path("/")).stdout.split()
    assert "site-packages" in where and not where.startswith(str(ROOT))
    assert version == "0.1.0" and present == "True"


def test_grade_reports_are_the_checkouts(installed, places):
    """One submission (en) and a class (zh): every file the same, byte for byte."""
    for place, bin_dir in zip(places, (installed, CHECKOUT_BIN)):
        for student in ("alice", "bob"):
            shutil.copytree(ROOT / "examples" / "class" / student, place / "class" / student)
        _run([str(bin_dir / "grade"), "class/bob", "--out", "report", "--quiet"], place)
        _run([str(bin_dir / "grade"), "class", "--out", "class-zh", "--lang", "zh", "--quiet"], place)
    wheel, checkout = places
    _same_tree(wheel / "report", checkout / "report")
    _same_tree(wheel / "class-zh", checkout / "class-zh")  # with summary.html and gradebook.csv
    assert '"kit_version": "0.1.0"' in (wheel / "report" / "results.json").read_text(encoding="utf-8")


def test_release_and_nbgrader_course_are_the_checkouts(installed, places):
    for place, bin_dir in zip(places, (installed, CHECKOUT_BIN)):
        place.mkdir()
        _run([str(bin_dir / "grade"), "release", "bundle"], place)
        _run([str(bin_dir / "grade"), "release", "bundle-ms", "--framework", "mindspore", "--lang", "zh"], place)
        _run([str(bin_dir / "grade"), "nbgrader", "course"], place)
    wheel, checkout = places
    for name in ("bundle", "bundle-ms"):
        _same_tree(wheel / name, checkout / name)
    _same_tree(wheel / "course" / "source", checkout / "course" / "source")
    # the bundle's self-check runs on the untouched stubs it ships
    done = subprocess.run([sys.executable, "check.py"], cwd=wheel / "bundle", capture_output=True, text=True)
    assert "Traceback" not in done.stdout + done.stderr and "sec3_3_simple_attention" in done.stdout


def _package_files(wheel: Path | zipfile.ZipFile) -> dict[str, bytes]:
    """The files of the kit's packages in a wheel, by name (its metadata left out)."""
    archive = wheel if isinstance(wheel, zipfile.ZipFile) else zipfile.ZipFile(wheel)
    return {n: archive.read(n) for n in archive.namelist() if n.startswith(("grader/", "solutions/"))}


def test_the_checkouts_platform_wheel_holds_what_the_built_wheel_holds(wheel, tmp_path):
    """The wheel a platform's image installs, packed from the running checkout, holds the files pip's
    wheel of the same checkout holds, byte for byte."""
    from grader.classroom.kit_wheel import build_wheel

    assert _package_files(build_wheel(tmp_path)) == _package_files(wheel)


def test_gradescope_and_prairielearn_ship_the_installed_kit_as_its_wheel(wheel, installed, places):
    here, _ = places
    here.mkdir()
    _run([str(installed / "grade"), "gradescope", "autograder.zip"], here)
    _run([str(installed / "grade"), "prairielearn", "question"], here)
    name = wheel.name
    archive = zipfile.ZipFile(here / "autograder.zip")
    assert sorted(archive.namelist()) == sorted(["setup.sh", "run_autograder", name])  # no copy of the tree
    shipped = archive.read(name)
    assert (here / "question" / "grader-image" / name).read_bytes() == shipped
    assert _package_files(zipfile.ZipFile(io.BytesIO(shipped))) == _package_files(wheel)
