"""The job process: a fork of the warm worker (`worker`) for one job. It reads the job, writes
the submission's files, forks the restricted children (`child`) that run its probes, watches them
and forwards their frames, then exits.

What a child sends never moves a deadline: each probe has its own clock, started once when the
probe starts (the child's CPU time, with a wall-clock backstop), and the submission's deadline is
fixed when its job arrives. Wall-clock time (code that sleeps or blocks costs no CPU time) is
also counted per module: the probes of one module share `module_seconds`, so a module that
sleeps uses up its own time, never that of the student's other modules; once it is used up, the
module's remaining probes are reported as "module-timeout" without being run.

A job with "follow": true (a grade job whose failed probes the trusted side may want traced) does
not end its job process at "done": it reads one more line, either {"id", "end": true} (answered
with "done") or the same submission's next job (its probes, e.g. in "trace" mode), which runs in
the child that ran the first job's last probes: that child parks after them (`child`), stopped
with SIGSTOP until it is given the next probes. No fork and no restrictions again (the child
imports the student's modules afresh, as a new child would); a child that could not park (it
left something behind, died or timed out) is replaced by a fresh one, as within a job.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import tempfile
import time

from grader.probes import PROBES
from grader.sandbox import child, cleanup, driver
from grader.sandbox.clocks import ModuleTime, ProbeClock, cpu_clock, module_of
from grader.sandbox.channel import ChannelError, FrameReader, frame, write_all

RESULT_FD = 3  # set by the warm worker (its --result-fd)
PID_NAMESPACE = False  # set by the warm worker (--pid-namespace): it runs in its own pid namespace
# A probe imports each of the seven modules at most once: more import notices than this are a
# child keeping the worker busy (its parsing is CPU time no clock of the child's counts).
MAX_NOTICES = 64
NO_MORE_JOBS = 3  # a job process's exit status: stdin is closed
STOP_SECONDS = 1.0  # for a parked child to be seen stopped (it takes microseconds); else it is not kept


OUTBOX_BYTES = 256 * 1024  # results waiting to be written at once (see `post`)
_outbox: list[bytes] = []
_outbox_size = 0


def send(header: dict, payload: bytes = b"") -> None:
    """Write a frame now, after the results still in the outbox (`post`)."""
    post(header, payload)
    flush()


def post(header: dict, payload: bytes = b"") -> None:
    """A probe's result (or status), written later with the ones that follow: a child's results
    reach the pool in about one write (one wake-up of the trusted pool's reader thread), not one
    per probe. The outbox is written once a child is dead (`_end`), with any frame that is `send`
    at once (a job's "done"), and as soon as it holds OUTBOX_BYTES. A job process killed by a
    signal loses what it holds: the pool runs those probes again, as it runs every probe a dead
    worker never answered."""
    global _outbox_size
    _outbox.append(frame(header, payload))
    _outbox_size += len(_outbox[-1])
    if _outbox_size >= OUTBOX_BYTES:
        flush()


def flush() -> None:
    """Write what the outbox holds, in one write."""
    global _outbox_size
    if _outbox:
        data = b"".join(_outbox)
        _outbox.clear()
        _outbox_size = 0
        write_all(RESULT_FD, data)


class Child:
    """A restricted child of this job process: its pid, its result pipe, and the command pipe of
    a child that parks after its probes (-1 for one that does not)."""

    def __init__(self, pid: int, read_fd: int, command_fd: int):
        self.pid, self.read_fd, self.command_fd = pid, read_fd, command_fd
        self.reader = FrameReader(read_fd)


def run_job(job: dict, uid: int) -> int:
    """One job (and, for a job to follow up, the next one of the same submission); the job
    process's exit status."""
    scratch = tempfile.mkdtemp(prefix="submission-")
    for name, data in job["files"].items():
        with open(os.path.join(scratch, os.path.basename(name)), "wb") as handle:
            handle.write(base64.b64decode(data))
    if os.getuid() == 0:
        os.chown(scratch, uid, uid)
        for name in os.listdir(scratch):
            os.chown(os.path.join(scratch, name), uid, uid)
    poisoned: dict[str, str] = {}
    last, parked, status = job, None, 0
    try:
        parked = _run_probes(job, poisoned, scratch, uid, None, park=bool(job.get("follow")))
        if job.get("follow"):
            send({"id": job["id"], "status": "done"})  # its child (if parked) waits for what follows
            line = read_line(0)
            last = json.loads(line) if line.strip() else None
            if last is None:
                status = NO_MORE_JOBS
            elif not last.get("end"):
                if last.get("files") != job["files"]:  # a grader bug: never another submission's child
                    last = dict(last, mode=None)
                _run_probes(last, poisoned, scratch, uid, parked, park=False)
                parked = None  # ended by `_run_probes`
    finally:
        if parked is not None:
            _end(parked, uid, scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    if last is not None:
        send({"id": last["id"], "status": "done"})
    return status


def _run_probes(job: dict, poisoned: dict[str, str], scratch: str, uid: int, parked: Child | None,
                park: bool) -> Child | None:
    """The job's probes, in `parked` (a child of this job process that waits for them) and then
    in fresh children; returns the last child if it parked (`park`) after the last probe."""
    limits = job["limits"]
    submission_end = time.monotonic() + limits["submission_seconds"]
    remaining = [name for name in job["probes"] if name in PROBES]
    if job.get("mode") not in driver.MODES:  # a grader bug: no probe can run
        for name in remaining:
            post({"id": job["id"], "probe": name, "status": "crash"})
        remaining = []
    budget = [limits["result_bytes"]]  # payload bytes this job may still forward
    left = ModuleTime(limits["module_seconds"])
    kept = None
    try:
        while remaining:
            if time.monotonic() >= submission_end:
                for name in remaining:
                    post({"id": job["id"], "probe": name, "status": "timeout"})
                break
            for name in [name for name in remaining if left(name) <= 0]:
                post({"id": job["id"], "probe": name, "status": "module-timeout", "module": module_of(name)})
                remaining.remove(name)
            if remaining:
                used, parked = parked, None
                remaining, kept = _run_child(job, remaining, poisoned, scratch, uid, submission_end, budget, left,
                                             used, park)
    finally:
        if parked is not None:
            _end(parked, uid, scratch)  # never used: no probe of the job was left to run
    return kept


def _run_child(job, remaining, poisoned, scratch, uid, submission_end, budget, left, parked: Child | None,
               park: bool) -> tuple[list[str], Child | None]:
    """Run the remaining probes in `parked` (continued) or in a freshly forked child; returns the
    probes still to run afterwards, and the child if it parked after the last one (`park`)."""
    if parked is not None and not _continue(parked, job, remaining, park):
        _end(parked, uid, scratch)  # before any other child exists: its clean-up kills the slot's every process
        parked = None
    its = parked or _fork(job, remaining, poisoned, scratch, uid, park)
    limits = job["limits"]
    clock = ProbeClock(its.pid, uid if os.getuid() == 0 else None, limits["probe_seconds"],
                       limits["probe_wall_seconds"], submission_end)
    remaining = list(remaining)
    started_with = len(remaining)
    current = importing = failure = None
    kept = None
    try:
        failure, current, importing = _watch(its.reader, clock, job, remaining, budget, left)
        if park and failure is None and not remaining and _parked(its, clock):
            kept = its
    finally:
        status = _end(its, uid, scratch) if kept is None else 0
    if not remaining:
        return [], kept
    if current is None and len(remaining) < started_with:
        return remaining, None  # ended between two probes after some results: the rest goes to a new child
    if failure is None:
        failure = _outcome_of_exit(status)
    culprit = current if current in remaining else remaining[0]  # a child that made no progress
    post({"id": job["id"], "probe": culprit, "status": failure, "module": importing or ""})
    remaining.remove(culprit)
    if importing and not (failure == "timeout" and clock.cut_short):
        # an import that ran out of what was left of a module's time is not known to hang: the
        # next module that needs it tries again on its own time (sec3_6 imports sec3_5)
        poisoned[importing] = failure
    return remaining, None


def _fork(job: dict, remaining: list[str], poisoned: dict[str, str], scratch: str, uid: int, park: bool) -> Child:
    read_fd, write_fd = os.pipe()
    command_read, command_write = os.pipe() if park else (-1, -1)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            if park:
                os.close(command_write)
            child.run(job, remaining, poisoned, scratch, write_fd, uid, PROBES, command_read)
        finally:
            os._exit(child.FAILED)
    os.close(write_fd)
    if park:
        os.close(command_read)
    return Child(pid, read_fd, command_write)


def _parked(its: Child, clock: ProbeClock) -> bool:
    """Whether the child, after its last result, parked (see `child`) with nothing of its own
    left running (one thread, no process); if so it stays stopped (SIGSTOP) until `_continue`."""
    try:
        header = its.reader.header(clock)
    except (TimeoutError, ChannelError, OSError):
        return False
    if header is None or header.get("kind") != "parked" or header["size"] or not cleanup.alone(its.pid) \
            or cleanup.strays(its.pid):
        return False
    os.kill(its.pid, signal.SIGSTOP)
    stop_by = time.monotonic() + STOP_SECONDS
    while True:  # never a blocking wait: a SIGCONT from elsewhere could undo the stop before it is seen
        pid, status = os.waitpid(its.pid, os.WUNTRACED | os.WNOHANG)
        if pid:
            break
        if time.monotonic() >= stop_by:
            return False
        time.sleep(0.0002)
    if not os.WIFSTOPPED(status):
        its.pid = -its.pid  # ended meanwhile, and reaped: `_end` must not wait for it again
        return False
    # stopped: nothing of it can start a thread or a process any more; with none, nothing but the
    # worker can continue it (the slot's other processes are its descendants)
    return cleanup.alone(its.pid) and not cleanup.strays(its.pid)


def _continue(its: Child, job: dict, remaining: list[str], park: bool) -> bool:
    """Give a parked child the next probes and let it go on; False if it cannot take them. It
    takes them only if what is left of its CPU limit (RLIMIT_CPU, set once per child, and only
    root with CAP_SYS_RESOURCE could raise it) covers each probe's whole CPU time and a second:
    then, as in a new child, every probe ends by its own clock, never by the child's limit."""
    limits = job["limits"]
    try:
        used = time.clock_gettime(cpu_clock(its.pid))
    except OSError:
        return False
    if used + len(remaining) * limits["probe_seconds"] + 1 > limits["cpu_seconds"]:
        return False
    command = json.dumps({"mode": job["mode"], "probes": remaining, "park": park}).encode() + b"\n"
    try:
        written = os.write(its.command_fd, command)  # a few hundred bytes: within the pipe's buffer
        os.kill(its.pid, signal.SIGCONT)
    except OSError:
        return False
    return written == len(command)


def _end(its: Child, uid: int, scratch: str) -> int:
    """Kill the child and everything it started, reap them, clear what they left; its exit status.
    The outbox (`post`) is written once the child is dead, before the slower clean-up; a write
    that fails (the pool gone) still leaves nothing of the child's behind."""
    os.close(its.read_fd)
    if its.command_fd >= 0:
        os.close(its.command_fd)
    status = 0
    try:
        if its.pid > 0:
            cleanup.kill_all(uid, its.pid, PID_NAMESPACE)
            _, status = os.waitpid(its.pid, 0)
    finally:
        try:
            flush()
        finally:
            cleanup.reap_orphans(uid, PID_NAMESPACE)
            cleanup.clear_leftovers(uid, scratch)
            cleanup.clear_ipc(uid)
    return status


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
                    post({"id": job["id"], "probe": name, "status": "too-large", "module": ""})
                else:
                    payload = reader.payload(size, clock)
                    if payload is None:
                        return None, current, importing
                    budget[0] -= size
                    post({"id": job["id"], "probe": name, "status": "ok"}, payload)
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


def read_line(fd: int) -> bytes:
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
