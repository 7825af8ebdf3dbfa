"""The output folder's cache of baselines: the reference's (and the buggy variants') outputs per kit
version. They are the answer key, so only the grader's own user may read them: the folder is 0700
and each file 0600, written through a temporary file and a rename (a link at its path is replaced,
never followed)."""
from __future__ import annotations

import os
from pathlib import Path


def read(path: Path | None) -> bytes | None:
    """The cached bytes at PATH, or None when there are none."""
    if path is None:
        return None
    try:
        # for no other user to read (student code, where neither bubblewrap nor a mount namespace
        # hides the reports), also when an earlier version of the kit made the folder
        if path.parent.is_dir():
            os.chmod(path.parent, 0o700)
        return path.read_bytes()
    except OSError:
        return None


def write(path: Path, data: bytes, stale: str) -> None:
    """Store DATA at PATH and remove the folder's other files matching the glob STALE (older kit
    versions). Best effort: a cache that cannot be written is computed again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
        for old in path.parent.glob(stale):
            if old != path:
                old.unlink(missing_ok=True)  # only the current kit's baselines are kept
    except OSError:
        pass
