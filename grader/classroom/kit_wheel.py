"""The running kit as a wheel, for a grading platform's image to install (Gradescope's setup.sh,
PrairieLearn's Dockerfile: ``pip install --no-deps --target <a folder only root reads>``).

One way from a checkout and from an installed kit alike: the wheel is packed from the files Python
imports the kit from (the `grader` and `solutions` packages, as `pip install` or the checkout laid
them out; no compiled files, no cache) and the installed distribution's own metadata (METADATA,
entry points, licences), with the RECORD the wheel format asks for (PEP 427, PEP 376). Nothing is
built, so nothing needs a build backend or the network, and nothing is written into the checkout.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
import zipfile
from pathlib import Path

from grader.fingerprint import SKIPPED_FOLDERS
from grader.report.results_file import DISTRIBUTION

PACKAGES = ("grader", "solutions")
DIST_INFO_FILES = ("METADATA", "entry_points.txt", "top_level.txt")  # and licenses/*
WHEEL_FILE = "Wheel-Version: 1.0\nGenerator: attention-kit\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
DATE = (2024, 1, 1, 0, 0, 0)  # every entry's timestamp: the same kit gives the same wheel


def wheel_name() -> str:
    """attention_kit-<version>-py3-none-any.whl"""
    return f"{DISTRIBUTION.replace('-', '_')}-{_installed().version}-py3-none-any.whl"


def package_files() -> list[tuple[Path, str]]:
    """(file, path inside the wheel) for every file of the kit's packages: no compiled files, no
    caches (the answer key's outputs are computed in the image), no links."""
    files = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)  # where Python imports it from, without importing it
        assert spec is not None and spec.submodule_search_locations, name
        package = Path(spec.submodule_search_locations[0]).resolve()
        for folder, dirs, names in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
            for file_name in sorted(names):
                file = Path(folder) / file_name
                if file.suffix != ".pyc" and file.is_file() and not file.is_symlink():
                    files.append((file, file.relative_to(package.parent).as_posix()))
    return files


def _installed() -> importlib.metadata.Distribution:
    """The distribution pip installed (its .dist-info, which says who installed it), not the
    `attention_kit.egg-info` a build leaves in a checkout that is on sys.path (the current folder):
    that one lists the sources, not its metadata files."""
    found = list(importlib.metadata.distributions(name=DISTRIBUTION))
    if not found:
        raise importlib.metadata.PackageNotFoundError(DISTRIBUTION)
    return next((dist for dist in found if dist.read_text("INSTALLER") is not None), found[0])


def _dist_info() -> dict[str, bytes]:
    """The installed distribution's metadata files, by name inside its .dist-info folder."""
    dist = _installed()
    listed = [f.as_posix().split(".dist-info/", 1)[1] for f in dist.files or [] if ".dist-info/" in f.as_posix()]
    names = [n for n in listed if n in DIST_INFO_FILES or n.startswith("licenses/")]
    return {name: (dist.read_text(name) or "").encode("utf-8") for name in sorted(names)}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(folder: Path) -> Path:
    """Write the running kit's wheel into FOLDER; returns its path."""
    version = _installed().version
    info = f"{DISTRIBUTION.replace('-', '_')}-{version}.dist-info"
    entries = [(name, file.read_bytes()) for file, name in package_files()]
    entries += [(f"{info}/{name}", data) for name, data in _dist_info().items()]
    entries.append((f"{info}/WHEEL", WHEEL_FILE.encode("ascii")))
    record = "".join(_record_line(name, data) + "\n" for name, data in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode("utf-8")))
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / wheel_name()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            entry = zipfile.ZipInfo(name, date_time=DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return out
