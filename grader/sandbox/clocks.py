"""The worker's clocks: a probe's (`ProbeClock`: CPU time with a wall-clock backstop) and each
module's share of wall-clock time (`ModuleTime`). Both are set by the worker alone: nothing a
child sends moves them (see `worker`)."""

from __future__ import annotations

import os
import time

TICKS = os.sysconf("SC_CLK_TCK")


class ProbeClock:
    """Seconds left for the probe in progress: `cpu_seconds` of CPU time (so that a busy machine
    never times out a correct submission), with a wall-clock backstop for code that sleeps or
    blocks. Restarted only when the next probe starts, never moved by anything else.

    The child's CPU time comes from its process CPU clock (all its threads; one cheap syscall per
    probe). Once the probe has run as long as its CPU budget (one thread cannot spend CPU time
    faster than wall time), what its reaped children spent counts too, and (as root, where the
    slot's uid is the child's alone) every other live process of the slot's uid: work handed to
    forked processes is not free."""

    def __init__(self, pid: int, uid: int | None, cpu_seconds: float, wall_seconds: float, submission_end: float):
        self.pid, self.uid = pid, uid
        self.clock = cpu_clock(pid)
        self.cpu_seconds, self.wall_seconds, self.submission_end = cpu_seconds, wall_seconds, submission_end
        self.start()

    def cpu(self) -> float:
        try:
            return time.clock_gettime(self.clock)
        except OSError:
            return float("inf")  # the child is gone: nothing left to wait for

    def tree_cpu(self) -> float:
        """The child's CPU time, its reaped children's and that of the slot's other processes."""
        total = self.cpu()
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                total += _cpu_of(stat.read(), children_only=True)
        except (OSError, ValueError, IndexError):
            pass
        if self.uid is None:
            return total
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != self.pid:
                try:
                    if os.stat(f"/proc/{entry}").st_uid == self.uid:
                        with open(f"/proc/{entry}/stat", "rb") as stat:
                            total += _cpu_of(stat.read())
                except (OSError, ValueError, IndexError):
                    pass
        return total

    def start(self, module_left: float = float("inf")) -> None:
        now = time.monotonic()
        self.cpu_start = self.cpu()
        self.wall_end = min(now + self.wall_seconds, now + module_left, self.submission_end)
        # less than the probe's own time: what was left of its module's allowance or of the submission's
        self.cut_short = self.wall_end < now + self.wall_seconds
        self.check_at = now + self.cpu_seconds

    def __call__(self) -> float:
        now = time.monotonic()
        left = self.wall_end - now
        if left <= 0:
            return 0.0
        if now >= self.check_at:
            cpu_left = self.cpu_seconds - (self.tree_cpu() - self.cpu_start)
            if cpu_left <= 0:
                return 0.0
            self.check_at = now + cpu_left
        return min(left, self.check_at - now)


def cpu_clock(pid: int) -> int:
    """A process's CPU clock, for time.clock_gettime: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)."""
    return ((~pid) << 3) | 2


def _cpu_of(stat: bytes, children_only: bool = False) -> float:
    """User and system CPU seconds in a /proc/<pid>/stat line, with those of reaped children."""
    fields = stat.rsplit(b")", 1)[1].split()
    return sum(int(f) for f in fields[13 if children_only else 11 : 15]) / TICKS


class ModuleTime:
    """Wall-clock seconds each module's probes may still use (a probe's module: `module_of`)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.spent: dict[str, float] = {}

    def __call__(self, probe: str) -> float:
        return self.seconds - self.spent.get(module_of(probe), 0.0)

    def charge(self, probe: str, seconds: float) -> None:
        module = module_of(probe)
        self.spent[module] = self.spent.get(module, 0.0) + seconds


def module_of(probe: str) -> str:
    return probe.split(":", 1)[0]  # probe names are "<module>:<function>"
