"""What a cache is keyed by: digests of the kit's files and the frameworks' versions, each computed
once per process. Imports only the standard library (the trusted run plans before torch is in)."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
from pathlib import Path

import grader
import solutions

SKIPPED_FOLDERS = ("__pycache__", ".cache")  # compiled files and the kit's own cache (grader/.cache)


def version(package: str) -> str:
    """An installed distribution's version, or "" (not installed, or installed without metadata)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


@functools.cache
def tree_digest(root: Path) -> bytes:
    """Every file under ROOT (its path and its content), without caches and compiled files."""
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]  # not walked into
        files += [Path(folder) / name for name in names if not name.endswith(".pyc")]
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.digest()


@functools.cache
def code_fingerprint() -> str:
    """What decides every probe output of the reference and of its variants: the grader's code, the
    solutions and the versions of torch and MindSpore (the answer key's cache key)."""
    digest = hashlib.sha256(f"{version('torch')}\0{version('mindspore')}".encode())
    for root in (Path(grader.__file__).resolve().parent, Path(solutions.__file__).resolve().parent):
        digest.update(tree_digest(root))
    return digest.hexdigest()[:16]
