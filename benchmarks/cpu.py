"""CPU time of a process tree and of the whole machine (for the benchmarks and the sandbox tests
that check what a process spent).

`measured` runs a command and counts the CPU time of everything it started, however it ended:
from a cgroup v2 of its own where this user may make one (root: the command and every process it
starts are in it, reaped or not), otherwise from /proc (the command's own time and that of the
descendants it reaped: a lower bound when it leaves processes behind).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
_names = itertools.count()


def tree_cpu(pid: int) -> float:
    """CPU seconds of pid's live descendants, with their reaped children (not pid itself)."""
    total, stack = 0.0, [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as handle:
                    children = [int(c) for c in handle.read().split()]
            except OSError:
                continue
            for child in children:
                try:
                    with open(f"/proc/{child}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                total += sum(int(f) for f in fields[11:15]) / TICKS
                stack.append(child)
    return total


def machine_cpu() -> float:
    """CPU seconds all cores spent busy since boot (to see what else ran during the measurement)."""
    with open("/proc/stat") as handle:
        fields = [int(f) for f in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / TICKS


@dataclass(frozen=True)
class Usage:
    """What one command spent: wall-clock seconds, CPU seconds of its whole process tree, of the
    command's own process (all its threads), and where the tree's time was read ("cgroup", "proc")."""

    wall: float
    cpu: float
    own: float
    source: str
    returncode: int = 0

    @property
    def descendants(self) -> float:
        """CPU seconds of everything the command started (for `grade`: the sandbox)."""
        return max(0.0, self.cpu - self.own)


def cgroup_root() -> Path | None:
    """Where this process may make a cgroup v2 of its own (root on a host with one), or None."""
    for candidate in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        controls = (candidate / "cgroup.procs").is_file() and (candidate / "cgroup.subtree_control").is_file()
        if controls and os.access(candidate, os.W_OK):
            return candidate
    return None


def measured(command: list[str], **popen: object) -> Usage:
    """Run `command` (subprocess.Popen's keyword arguments in `popen`) to its end and count its CPU
    time: the whole tree's from a cgroup v2 of its own (waiting, at most 60 s, for every process in
    it to end), else from /proc."""
    root = cgroup_root()
    group = None
    if root is not None:
        group = root / f"attention-kit-bench-{os.getpid()}-{next(_names)}"
        try:
            group.mkdir()
        except OSError:
            group = None
    procs = str(group / "cgroup.procs") if group is not None else ""

    def enter() -> None:
        if procs:
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))

    started = time.perf_counter()
    process = subprocess.Popen(command, preexec_fn=enter if procs else None, **popen)
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: its /proc entry stays
    wall = time.perf_counter() - started
    with open(f"/proc/{process.pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / TICKS
    reaped = (int(fields[13]) + int(fields[14])) / TICKS
    returncode = process.wait()
    if group is None:
        return Usage(wall, own + reaped, own, "proc", returncode)
    try:
        return Usage(wall, _cgroup_cpu(group), own, "cgroup", returncode)
    finally:
        try:
            group.rmdir()
        except OSError:
            pass


def _cgroup_cpu(group: Path, seconds: float = 60.0) -> float:
    """The group's CPU seconds once no process is left in it (what a killed worker spends dying counts)."""
    deadline = time.monotonic() + seconds
    while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    for line in (group / "cpu.stat").read_text().splitlines():
        name, value = line.split()
        if name == "usage_usec":
            return int(value) / 1e6
    raise RuntimeError(f"no usage_usec in {group / 'cpu.stat'}")
