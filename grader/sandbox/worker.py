"""A sandbox worker: two processes, started by a fresh exec (never a fork of the grader, which holds
the solutions), inside bubblewrap where available.

- The watcher (the process started, bubblewrap's pid 2) reads the jobs, writes each submission's
  files, hands each child its job, watches the children (`job`, `watch`) and forwards their
  results. It never imports torch and never forks a child of its own: what it holds of a student
  is in no child's memory.
- The fork server (`forkserver`, forked from the watcher before anything else) warms up once
  (`warmup`: torch, the probes), then forks one restricted child (`child`) per submission when the
  watcher asks, and reaps it. It never reads a job or a result: nothing of a student (the files as
  they arrived, the results forwarded, the frames' headers) is ever in the memory that the next
  student's children start with a copy of. One fork per child, and no other fork per submission.

Protocol with the trusted pool (the watcher's stdin and result fd):
  stdin  <- one JSON line per job: {"id", "files": {name: base64}, "probes": [...], "mode", "limits"}
  result fd -> frames (`channel`): {"status": "ready"} once, then per job {"id", "probe", "status":
  "ok"} with the child's serialised record as payload, or {"id", "probe", "status": "timeout" |
  "crash" | "resource" | "memory" | "exit" | "too-large" | "module-timeout", "module"} with none, and {"id",
  "status": "done"}.
The watcher never deserialises what a child sends: it checks the frames' order and sizes and
forwards the payload for the trusted side to decode (JSON plus raw tensor bytes: no pickle).

A job with "follow": true is followed by one more line: {"id", "end": true}, or the same
submission's next job, run in the child that ran the first one's last probes (see `job`).
Between the watcher and the fork server: `forks`.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from grader.sandbox import forks, oom, private_view
from grader.sandbox.channel import Outbox

READY_SECONDS = 600  # the fork server's warm-up (the pool gives up on a worker well before)


def _argument(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    uid = int(_argument("--uid", "65534"))
    result_fd = int(_argument("--result-fd", "3"))
    # bubblewrap's init is pid 1 of the new namespace and this worker pid 2; outside a pid
    # namespace pid 2 is never a Python process, so kill(-1) can never reach the host
    pid_namespace = "--pid-namespace" in sys.argv and os.getpid() <= 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    view = _argument("--private-view", "")
    if view:
        try:
            private_view.make(**json.loads(view))
        except OSError:
            pass  # e.g. a container without CAP_SYS_ADMIN: as exposed as without it (reported as no bubblewrap)
    # the slot's memory group (see `oom`): the fork server's children join it, the watcher counts its OOM kills
    procs_fd, events_fd = (int(fd) for fd in _argument("--memory-group", "-1,-1").split(","))
    watcher_end, server_end = forks.socket_pair()
    server = os.fork()
    if server == 0:
        watcher_end.close()
        os.close(result_fd)  # the pool's result pipe is the watcher's alone
        _close(events_fd)
        from grader.sandbox import forkserver

        try:
            expected = int(_argument("--forks", "0"))
            forkserver.serve(server_end, uid, _argument("--flavour", "torch"), pid_namespace, expected, procs_fd)
        finally:
            os._exit(0)
    server_end.close()
    _close(procs_fd)
    ooms = oom.OomCounter(events_fd) if events_fd >= 0 else None
    watch(Outbox(result_fd), forks.Forker(watcher_end, server), uid, pid_namespace, ooms)


def _close(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def watch(
    outbox: Outbox, forker: forks.Forker, uid: int, pid_namespace: bool, ooms: oom.OomCounter | None = None
) -> None:
    """The watcher: once the fork server is warm, one job after another until stdin is closed."""
    from grader.sandbox import job

    try:
        can = forker.ready(READY_SECONDS)
    except forks.ForkServerGone:
        return  # the pool sees this worker end without saying it is ready
    slot = job.Slot(
        uid,
        pid_namespace,
        forker,
        frozenset(can["probes"]),
        frozenset(can["modes"]),
        frozenset({1, os.getpid(), forker.server_pid}),
        ooms,
    )
    outbox.send({"status": "ready"})
    status = 0
    try:
        while status == 0:
            line = job.read_line(0)
            if not line.strip():
                break  # the pool closed stdin
            record = json.loads(line)
            if record.get("end"):  # the end of a job to follow up that ended already: nothing to end
                outbox.send({"id": record["id"], "status": "done"})
                continue
            status = job.run_job(record, slot, outbox)
    finally:
        outbox.flush()  # the results of a job that ended by an exception still reach the pool


if __name__ == "__main__":
    main()
