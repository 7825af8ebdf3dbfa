"""The sandbox's side of a slot's memory group (see `memory`, which makes the groups): each child
joins it before any student code runs, and the watcher counts the group's OOM kills, to tell a
child stopped for its memory from one that crashed. Both through descriptors the worker inherits
(`--memory-group PROCS,EVENTS`); the sandbox never sees /sys. Copied into the sandbox: standard
library only."""

from __future__ import annotations

import os


def join(procs_fd: int) -> bool:
    """Move this process (a child, still root or the grading user) into the group whose
    cgroup.procs `procs_fd` is open on; everything it starts is in the group too."""
    try:
        return os.write(procs_fd, b"0") == 1
    except OSError:
        return False


class OomCounter:
    """The OOM kills of a group so far, read from its events file (v2's memory.events, v1's
    memory.oom_control: both have an "oom_kill <count>" line) through `events_fd`."""

    def __init__(self, events_fd: int):
        self.fd = events_fd

    def __call__(self) -> int:
        try:
            return kills(os.pread(self.fd, 4096, 0))
        except OSError:
            return 0


def kills(text: bytes) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == b"oom_kill" and value.strip().isdigit():
            return int(value)
    return 0
