"""CPU time of a process tree and of the whole machine, read from /proc (for the benchmarks and
the sandbox tests that check what a process spent)."""

from __future__ import annotations

import os


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
                total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
                stack.append(child)
    return total


def machine_cpu() -> float:
    """CPU seconds all cores spent busy since boot (to see what else ran during the measurement)."""
    with open("/proc/stat") as handle:
        fields = [int(f) for f in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")
