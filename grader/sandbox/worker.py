"""The warm worker: warmed up once (`warmup`), then forks one restricted child (`child`) per
submission and watches it.

Started by a fresh exec (never a fork of the grader, which holds the solutions), inside bubblewrap
where available. The warm worker itself never reads a job: for each one it forks a job process
(`job`) that reads it, writes the files, forks the children and forwards their frames, then exits. So
nothing of a student (the files as they arrived, the results forwarded, the frames' headers) is
ever in the memory that the next student's children start with a copy of.

Protocol with the trusted pool:
  stdin  <- one JSON line per job: {"id", "files": {name: base64}, "probes": [...], "mode", "limits"}
  result fd -> frames (`channel`): {"status": "ready"} once, then per job {"id", "probe", "status":
  "ok"} with the child's serialised record as payload, or {"id", "probe", "status": "timeout" |
  "crash" | "resource" | "exit" | "too-large" | "module-timeout", "module"} with none, and {"id",
  "status": "done"}.
The worker never deserialises what a child sends: it checks the frames' order and sizes and
forwards the payload for the trusted side to decode (JSON plus raw tensor bytes: no pickle).

A job with "follow": true keeps its job process for one more line: {"id", "end": true}, or the same
submission's next job, run in the child that ran the first one's last probes (see `job`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys

from grader.sandbox import child, job, private_view, warmup
from grader.sandbox.channel import Outbox
from grader.sandbox.job import NO_MORE_JOBS

PR_SET_CHILD_SUBREAPER = 36


def _argument(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    uid = int(_argument("--uid", "65534"))
    outbox = Outbox(int(_argument("--result-fd", "3")))
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
    child.LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    warmup.warm_up(_argument("--flavour", "torch"))
    child.block_keyrings()
    outbox.send({"status": "ready"})
    while True:
        select.select([0], [], [])  # a job (or the end of the pool) is waiting: never read here
        pid = os.fork()
        if pid == 0:
            status = NO_MORE_JOBS
            try:
                status = job_process(uid, outbox, pid_namespace)
            finally:
                try:
                    outbox.flush()  # the results of a job process that ended by an exception still reach the pool
                finally:
                    os._exit(status)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return  # the pool closed stdin, or the job process failed: the pool sees this worker end


def job_process(uid: int, outbox: Outbox, pid_namespace: bool) -> int:
    """One job, in a fork of the warm worker (see the module's docstring); its exit status."""
    child.LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the children's orphans come back here
    line = job.read_line(0)
    if not line.strip():
        return NO_MORE_JOBS
    record = json.loads(line)
    if record.get("end"):  # the end of a job to follow up whose job process is gone: nothing to end
        outbox.send({"id": record["id"], "status": "done"})
        return 0
    return job.run_job(record, uid, outbox, pid_namespace)


if __name__ == "__main__":
    main()
