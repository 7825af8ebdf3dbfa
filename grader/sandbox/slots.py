"""The slots' uids: each grading run reserves a range of SLOTS_PER_RUN uids from SLOT_UID_BASE,
one uid per worker, so that two runs at once never share one."""

from __future__ import annotations

import fcntl
import functools
import os
import tempfile
from pathlib import Path

SLOT_UID_BASE = 61000
SLOTS_PER_RUN = 16  # uids per grading run, for all its pools' workers
UID_RANGES = 2000  # ranges of SLOTS_PER_RUN uids from SLOT_UID_BASE, one per grading run at a time
_RESERVED: list[int] = []  # the lock files' descriptors: held until this process exits


@functools.cache
def uid_base() -> int:
    """Per-run uids for the slots (all pools of this process share them)."""
    return SLOT_UID_BASE + reserve_uid_range(os.getpid() % UID_RANGES) * SLOTS_PER_RUN


def reserve_uid_range(start: int, folder: Path | None = None) -> int:
    """The first range from `start` on that no other grading run holds, held with a lock file until
    this process exits: two runs at once never share a uid (one run's clean-up kills every process
    of its slots' uids and removes their files). Without a lock folder, `start` itself."""
    folder = folder or Path(tempfile.gettempdir()) / "attention-kit-uids"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        for step in range(UID_RANGES):
            index = (start + step) % UID_RANGES
            descriptor = os.open(folder / f"{index}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                continue
            _RESERVED.append(descriptor)
            return index
    except OSError:
        pass
    return start
