"""What a fork-per-submission sandbox cannot go below, measured in a process warmed up exactly as a
sandbox worker is (`grader.sandbox.warmup`, the workers' environment):

- in-process: every probe of each submission run in this warm process, one after the other (the
  probes' own cost: importing the student's modules and running them);
- bare fork: fork this warm process and `_exit` at once (page tables copied and dropped);
- fork + probes: fork, run every probe of the submission in the child without any restriction,
  `_exit` (what a child costs before it is restricted, watched or read).

With --restrictions, the price of each restriction a sandbox child takes (`grader.sandbox.child`):
fork, take that one restriction, `_exit`, less a bare fork; then all of them (`child.restrict`, as
root with a slot's uid), and all of them with the probes. What the kernel does later on a worker
thread (freeing an IPC namespace) is not counted: only this process and its children are.

    python benchmarks/floors.py STUDENT_DIR... [--forks 200] [--restrictions]

Prints one JSON object: milliseconds of CPU per submission (this process and its children).
Used by benchmarks/throughput.py, which starts it with the workers' environment.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_all(directory: str) -> None:
    """Every probe on the submission in DIRECTORY, in this process; its modules forgotten afterwards."""
    from grader.probes import PROBES
    from grader.sandbox import driver

    names = [name for name in sys.modules if not name.startswith(("grader", "torch"))]
    warm = set(names)
    ns = driver.StudentNamespace(directory)
    meta_path = list(sys.meta_path)
    try:
        for name in sorted(PROBES):
            driver.serialise(driver.run_probe(PROBES[name], ns, directory))
    finally:
        sys.meta_path[:] = meta_path
        if ns.directory in sys.path:
            sys.path.remove(ns.directory)
        for name in [name for name in sys.modules if name not in warm and not name.startswith(("grader", "torch"))]:
            module = sys.modules.get(name)
            if os.path.dirname(str(getattr(module, "__file__", "") or "")) == ns.directory:
                del sys.modules[name]


def per_call(function, arguments: list, rounds: int = 1) -> float:
    """Milliseconds of CPU per call of FUNCTION, over ARGUMENTS (ROUNDS times)."""
    before = _cpu()
    for _ in range(rounds):
        for argument in arguments:
            function(argument)
    return 1000 * (_cpu() - before) / (rounds * len(arguments))


def forked(body):
    """Fork; the child runs BODY(argument) and `_exit`s; the parent waits."""

    def call(argument) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                body(argument)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    return call


def restriction_prices(students: list[str], forks: int) -> dict[str, float]:
    """Milliseconds of CPU each restriction of a sandbox child adds to a fork (see the docstring)."""
    import resource as limits

    from grader.sandbox import child

    budget = {
        "cpu_seconds": 30,
        "file_bytes": 1 << 20,
        "memory_bytes": 1 << 30,
        "processes": 16,
        "network_isolated": True,
    }
    uid = 61000
    steps = {
        "setsid": lambda _: os.setsid(),
        "rlimits": lambda _: [
            limits.setrlimit(limits.RLIMIT_NOFILE, (256, 256)),
            limits.setrlimit(limits.RLIMIT_CORE, (0, 0)),
        ],
        "ipc_namespace": lambda _: child.isolate_ipc(),
        "no_new_privs": lambda _: child.LIBC.prctl(child.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        "uid": lambda _: (os.setgroups([]), os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)),
        "all": lambda _: child.restrict(uid, budget),
    }
    bare = per_call(forked(lambda _: None), list(range(forks)))
    prices = {
        f"restriction_{name}_ms": per_call(forked(step), list(range(forks))) - bare for name, step in steps.items()
    }
    restricted = forked(lambda s: (child.restrict(uid, budget), run_all(s)))
    prices["fork_restricted_probes_ms"] = per_call(restricted, students)
    child.block_keyrings()  # the worker's seccomp filter, inherited by every child: last, it stays
    prices["fork_restricted_probes_seccomp_ms"] = per_call(restricted, students)
    return prices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("students", nargs="+")
    parser.add_argument("--forks", type=int, default=200)
    parser.add_argument("--restrictions", action="store_true", help="also price each restriction of a child")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader.sandbox import warmup

    warmup.warm_up("torch")
    students = [os.path.realpath(s) for s in args.students]
    run_all(students[0])  # the first import of anything a submission uses is not the floor
    floors = {
        "in_process_ms": per_call(run_all, students),
        "bare_fork_ms": per_call(forked(lambda _: None), list(range(args.forks))),
        "fork_probes_ms": per_call(forked(run_all), students),
    }
    if args.restrictions:
        floors |= restriction_prices(students, args.forks)
    print(json.dumps(floors))


if __name__ == "__main__":
    main()
