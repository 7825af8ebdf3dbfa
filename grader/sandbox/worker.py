"""The warm worker: warmed up once (`warmup`), then forks one restricted child (`child`) per
submission and watches it.

Started by a fresh exec (never a fork of the grader, which holds the solutions), inside bubblewrap
where available. The warm worker itself never reads a job: for each one it forks a job process
that reads it, writes the files, forks the children and forwards their frames, then exits. So
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

What a child sends never moves a deadline: each probe has its own clock, started once when the
probe starts (the child's CPU time, with a wall-clock backstop), and the submission's deadline is
fixed when its job arrives. Wall-clock time (code that sleeps or blocks costs no CPU time) is
also counted per module: the probes of one module share `module_seconds`, so a module that
sleeps uses up its own time, never that of the student's other modules; once it is used up, the
module's remaining probes are reported as "module-timeout" without being run.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

from grader.probes import PROBES
from grader.sandbox import child, cleanup, driver, private_view, warmup
from grader.sandbox.clocks import ModuleTime, ProbeClock, module_of
from grader.sandbox.channel import ChannelError, FrameReader, frame, write_all

RESULT_FD = 3
PR_SET_CHILD_SUBREAPER = 36
PID_NAMESPACE = False  # set from --pid-namespace: the worker runs in its own pid namespace
# A probe imports each of the seven modules at most once: more import notices than this are a
# child keeping the worker busy (its parsing is CPU time no clock of the child's counts).
MAX_NOTICES = 64
NO_MORE_JOBS = 3  # a job process's exit status: stdin is closed


def send(header: dict, payload: bytes = b"") -> None:
    write_all(RESULT_FD, frame(header, payload))  # one write: one wake-up of the pool


def run_job(job: dict, uid: int) -> None:
    limits = job["limits"]
    submission_end = time.monotonic() + limits["submission_seconds"]
    scratch = tempfile.mkdtemp(prefix="submission-")
    for name, data in job["files"].items():
        with open(os.path.join(scratch, os.path.basename(name)), "wb") as handle:
            handle.write(base64.b64decode(data))
    if os.getuid() == 0:
        os.chown(scratch, uid, uid)
        for name in os.listdir(scratch):
            os.chown(os.path.join(scratch, name), uid, uid)
    remaining = [name for name in job["probes"] if name in PROBES]
    if job.get("mode") not in driver.MODES:  # a grader bug: no probe can run
        for name in remaining:
            send({"id": job["id"], "probe": name, "status": "crash"})
        remaining = []
    poisoned: dict[str, str] = {}
    budget = [limits["result_bytes"]]  # payload bytes this job may still forward
    left = ModuleTime(limits["module_seconds"])
    try:
        while remaining:
            if time.monotonic() >= submission_end:
                for name in remaining:
                    send({"id": job["id"], "probe": name, "status": "timeout"})
                break
            for name in [name for name in remaining if left(name) <= 0]:
                send({"id": job["id"], "probe": name, "status": "module-timeout", "module": module_of(name)})
                remaining.remove(name)
            if remaining:
                remaining = _run_child(job, remaining, poisoned, scratch, uid, submission_end, budget, left)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    send({"id": job["id"], "status": "done"})


def _run_child(job, remaining, poisoned, scratch, uid, submission_end, budget, left) -> list[str]:
    """Fork one child for the remaining probes; returns the probes still to run afterwards."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            child.run(job, remaining, poisoned, scratch, write_fd, uid, PROBES)
        finally:
            os._exit(child.FAILED)
    os.close(write_fd)
    limits = job["limits"]
    clock = ProbeClock(pid, uid if os.getuid() == 0 else None, limits["probe_seconds"], limits["probe_wall_seconds"],
                       submission_end)
    remaining = list(remaining)
    started_with = len(remaining)
    current = importing = failure = None
    try:
        failure, current, importing = _watch(FrameReader(read_fd), clock, job, remaining, budget, left)
    finally:
        os.close(read_fd)
        cleanup.kill_all(uid, pid, PID_NAMESPACE)
        _, status = os.waitpid(pid, 0)
        cleanup.reap_orphans(uid, PID_NAMESPACE)
        cleanup.clear_leftovers(uid, scratch)
        cleanup.clear_ipc(uid)
    if not remaining:
        return []
    if current is None and len(remaining) < started_with:
        return remaining  # ended between two probes after some results: the rest goes to a new child
    if failure is None:
        failure = _outcome_of_exit(status)
    culprit = current if current in remaining else remaining[0]  # a child that made no progress
    send({"id": job["id"], "probe": culprit, "status": failure, "module": importing or ""})
    remaining.remove(culprit)
    if importing and not (failure == "timeout" and clock.cut_short):
        # an import that ran out of what was left of a module's time is not known to hang: the
        # next module that needs it tries again on its own time (sec3_6 imports sec3_5)
        poisoned[importing] = failure
    return remaining


def _watch(reader: FrameReader, clock: ProbeClock, job: dict, remaining: list[str], budget: list[int],
           left: ModuleTime):
    """Forward the child's results while its frames come in the only order the driver writes them
    (start, imports, result, per probe, in the job's order). Returns (failure or None, the probe
    in progress, the module being imported); `remaining` loses each probe that got a result. The
    wall-clock time from a probe's start to its end (its result, or the child's end) is charged to
    the probe's module, and so is the time from its result to the next probe's start or the
    child's end (no time between two probes is nobody's: a child that sends a result of its own
    and goes on sleeping pays for the sleep)."""
    current = importing = None
    notices = 0  # import notices of the probe in progress
    charged, since = None, 0.0  # the probe whose module the time since `since` is charged to
    try:
        while remaining:
            header = reader.header(clock)
            if header is None:
                return None, current, importing
            kind, name, size = header.get("kind"), header.get("name"), header["size"]
            if kind == "result" and current is not None and name == current:
                if size > job["limits"]["payload_bytes"]:
                    return "too-large", current, None  # not even read: the child is killed
                if size > budget[0]:
                    if not reader.skip(size, clock):
                        return None, current, importing
                    send({"id": job["id"], "probe": name, "status": "too-large", "module": ""})
                else:
                    payload = reader.payload(size, clock)
                    if payload is None:
                        return None, current, importing
                    budget[0] -= size
                    send({"id": job["id"], "probe": name, "status": "ok"}, payload)
                remaining.remove(name)
                current = importing = None
                if remaining and cleanup.strays(clock.pid):
                    return None, None, None  # the rest goes to a fresh child, with all its room
            elif size:
                raise ChannelError("only results carry a payload")
            elif kind == "start" and current is None and name == remaining[0]:
                charged, since = _charge(left, charged, since)
                current, charged, notices = name, name, 0
                clock.start(left(name))
            elif kind == "import" and current is not None and importing is None and _module_name(name) \
                    and notices < MAX_NOTICES:
                importing = name
                notices += 1
            elif kind == "imported" and importing is not None and name == importing:
                importing = None
            else:
                raise ChannelError("frame out of order")
    except TimeoutError:
        return "timeout", current, importing
    except (ChannelError, OSError):
        return "crash", current, importing  # garbage written to the result pipe
    finally:
        _charge(left, charged, since)  # the probe the child was running (or had run last) when it ended
    return None, current, importing


def _charge(left: ModuleTime, probe: str | None, since: float) -> tuple[str | None, float]:
    """Charge the time since `since` to `probe`'s module (if any); returns (probe, now)."""
    now = time.monotonic()
    if probe is not None:
        left.charge(probe, now - since)
    return probe, now


def _module_name(name: object) -> bool:
    return type(name) is str and len(name) <= 100 and name.isidentifier()


def _outcome_of_exit(status: int) -> str:
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) in (child.FAILED, child.NOT_DROPPED, child.NO_NAMESPACE):
        return "crash"
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum == signal.SIGXCPU:
            return "timeout"
        if signum in (signal.SIGXFSZ, signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS):
            return "resource"
        return "crash"
    return "exit"


def _argument(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    global RESULT_FD, PID_NAMESPACE
    uid = int(_argument("--uid", "65534"))
    RESULT_FD = int(_argument("--result-fd", "3"))
    # bubblewrap's init is pid 1 of the new namespace and this worker pid 2; outside a pid
    # namespace pid 2 is never a Python process, so kill(-1) can never reach the host
    PID_NAMESPACE = "--pid-namespace" in sys.argv and os.getpid() <= 2
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
    send({"status": "ready"})
    while True:
        select.select([0], [], [])  # a job (or the end of the pool) is waiting: never read here
        pid = os.fork()
        if pid == 0:
            status = NO_MORE_JOBS
            try:
                status = job_process(uid)
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return  # the pool closed stdin, or the job process failed: the pool sees this worker end


def job_process(uid: int) -> int:
    """One job, in a fork of the warm worker (see the module's docstring); its exit status."""
    child.LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the children's orphans come back here
    line = _read_line(0)
    if not line.strip():
        return NO_MORE_JOBS
    run_job(json.loads(line), uid)
    return 0


def _read_line(fd: int) -> bytes:
    """One job line, read without buffering past it (the next job belongs to the next process)."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


if __name__ == "__main__":
    main()
