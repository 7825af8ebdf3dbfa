"""The fork server: the warm half of a worker (see `worker`). Warmed up once (`warmup`), it forks one
restricted child (`child`) each time the watcher asks, reaps it and everything it left, and says
how it ended. It never reads a job, a file or a result: the child reads its own job from the
command pipe the watcher hands over, so nothing of a student is ever in the memory the next
student's child starts with a copy of. One child at a time.
"""

from __future__ import annotations

import os
import socket
from types import MappingProxyType

from grader.sandbox import child, cleanup, forks, sealing, warmup

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def serve(
    end: socket.socket, uid: int, flavour: str, pid_namespace: bool, expected: int = 0, memory_group: int = -1
) -> None:
    """Warm up (for about `expected` submissions; 0: not known), say so, then fork children until the
    watcher closes its end; each child joins the memory group whose cgroup.procs `memory_group`
    is open on (-1: none, and no child may make a memfd: nothing would count its pages)."""
    watcher = os.getppid()
    child.LIBC.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # the watcher gone (killed): nothing is left to watch children
    if os.getppid() != watcher:
        return
    child.LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the children's orphans come back here
    _detach_from_the_pool()
    warmup.warm_up(flavour, expected)
    child.block_keyrings(memory_group)
    from grader.frameworks import bind_namespaces
    from grader.probes import PROBES
    from grader.sandbox import driver

    probes = MappingProxyType(dict(PROBES))  # the table as warmed up: the children's, and nobody's to change
    bind_namespaces()  # every track's namespace imported: a child imports nothing of the kit
    sealing.hide_kit()  # no student module can import (and rebind) what the children run
    child.remember_worker_modules()

    forks.send(end, {"probes": sorted(probes), "modes": sorted(driver.MODES)})
    spared = {1, os.getpid(), watcher}
    while True:
        try:
            message, fds = forks.receive(end, 2)
        except (OSError, ValueError):
            return
        if message is None or not message.get("fork") or len(fds) != 2:
            forks.close_all(fds)
            return
        result_fd, command_fd = fds
        pid = os.fork()
        if pid == 0:
            try:
                child.serve(result_fd, command_fd, uid, probes)
            finally:
                os._exit(forks.FAILED)
        forks.close_all(fds)
        forks.send(end, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        cleanup.reap_orphans(uid, pid_namespace, spared)
        forks.send(end, {"status": status})


def _detach_from_the_pool() -> None:
    """The pool's pipes are the watcher's alone: stdin (the jobs) becomes /dev/null here, and every
    other inherited descriptor but the socket is closed by the caller before this runs."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
