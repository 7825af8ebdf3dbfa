"""One job in the watcher (see `worker`): it writes the submission's files, has the fork server
fork the restricted children (`child`) that run its probes, hands each its job through its command
pipe, watches them and forwards their frames.

What a child sends never moves a deadline: each probe has its own clock, started once when the
probe starts (the child's CPU time, with a wall-clock backstop), and the submission's deadline is
fixed when its job arrives. Wall-clock time (code that sleeps or blocks costs no CPU time) is
also counted per module: the probes of one module share `module_seconds`, so a module that
sleeps uses up its own time, never that of the student's other modules; once it is used up, the
module's remaining probes are reported as "module-timeout" without being run.

A job with "follow": true (a grade job whose failed probes the trusted side may want traced) does
not end at "done": the watcher reads one more line, either {"id", "end": true} (answered with
"done") or the same submission's next job (its probes, e.g. in "trace" mode), which runs in the
child that ran the first job's last probes: that child parks after them (`child`), stopped with
SIGSTOP until it is given the next probes. No fork and no restrictions again (the child imports
the student's modules afresh, as a new child would); a child that could not park (it left
something behind, died or timed out) is replaced by a fresh one, as within a job.

A job's state is one `JobProcess` (the outbox its results go through, the slot's uid, the
submission's files, the imports that failed, the fork server); each job's run is a `RunningJob`
(its deadline and what it may still use) and each child's frames are read by a `Watch` (both in
`watch`). Copied into the sandbox: standard library only (the watcher never imports torch).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from grader.sandbox import cleanup
from grader.sandbox.channel import ChannelError, FrameReader, Outbox
from grader.sandbox.clocks import ProbeClock, cpu_clock, module_of
from grader.sandbox.forks import FAILED, NO_NAMESPACE, NOT_DROPPED, Forker
from grader.sandbox.watch import RunningJob, Watch

NO_MORE_JOBS = 3  # the watcher's exit status: stdin is closed
STOP_SECONDS = 1.0  # for a parked child to be seen stopped (it takes microseconds); else it is not kept


@dataclass(frozen=True)
class Slot:
    """What every job of a watcher shares: the slot's uid, whether the worker has a pid namespace
    of its own (see `cleanup`), the fork server, what its children can run, the processes
    that clean-up spares (bubblewrap's init, the watcher, the fork server), and the OOM kills of
    its memory group so far (`oom`; None without one)."""

    uid: int
    pid_namespace: bool
    forker: Forker
    probes: frozenset[str]
    modes: frozenset[str]
    spared: frozenset[int]
    ooms: Callable[[], int] | None = None


class Child:
    """A restricted child of this job process: its pid, its result pipe, and the command pipe of
    a child that parks after its probes (-1 for one that does not)."""

    def __init__(self, pid: int, read_fd: int, command_fd: int):
        self.pid, self.read_fd, self.command_fd = pid, read_fd, command_fd
        self.reader = FrameReader(read_fd)


def run_job(job: dict, slot: Slot, outbox: Outbox) -> int:
    """One job (and, for a job to follow up, the next one of the same submission); 0, or
    NO_MORE_JOBS once stdin is closed. Its results go through `outbox` (the worker's result pipe)."""
    scratch = _write_files(job["files"], slot.uid)
    try:
        last, status = JobProcess(outbox, slot, scratch).run(job)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if last is not None:
        outbox.send({"id": last["id"], "status": "done"})
    return status


def _write_files(files: dict[str, str], uid: int) -> str:
    """The submission's files in a fresh folder (owned by the slot's uid, as root); its path."""
    scratch = tempfile.mkdtemp(prefix="submission-")
    for name, data in files.items():
        with open(os.path.join(scratch, os.path.basename(name)), "wb") as handle:
            handle.write(base64.b64decode(data))
    if os.getuid() == 0:
        os.chown(scratch, uid, uid)
        for name in os.listdir(scratch):
            os.chown(os.path.join(scratch, name), uid, uid)
    return scratch


def _next_job(job: dict) -> dict | None:
    """What follows a job to follow: nothing (stdin closed: None), {"id", "end": true}, or the
    same submission's next job (another submission's is a grader bug: no probe of it can run)."""
    line = read_line(0)
    following = json.loads(line) if line.strip() else None
    if following is not None and not following.get("end") and following.get("files") != job["files"]:
        following = dict(following, mode=None)  # never another submission's child
    return following


class JobProcess:
    """What the watcher holds while it runs a submission's jobs: the outbox its results go
    through, the slot, the submission's files (`scratch`), and the modules whose import failed in
    a child (`poisoned`: module -> failure), which its later children do not import again."""

    def __init__(self, outbox: Outbox, slot: Slot, scratch: str):
        self.outbox, self.slot, self.uid, self.scratch = outbox, slot, slot.uid, scratch
        self.poisoned: dict[str, str] = {}

    def run(self, job: dict) -> tuple[dict | None, int]:
        """The job, and what follows it for a job to follow; returns the last job (to be answered
        "done"; None once stdin is closed) and the job process's exit status."""
        last: dict | None = job
        parked, status = None, 0
        try:
            parked = self.run_probes(job, None, park=bool(job.get("follow")))
            if job.get("follow"):
                self.outbox.send({"id": job["id"], "status": "done"})  # its child (if parked) waits for what follows
                last = _next_job(job)
                if last is None:
                    status = NO_MORE_JOBS
                elif not last.get("end"):
                    self.run_probes(last, parked, park=False)
                    parked = None  # ended by `run_probes`
        finally:
            if parked is not None:
                self.end(parked)
        return last, status

    def run_probes(self, job: dict, parked: Child | None, park: bool) -> Child | None:
        """The job's probes, in `parked` (a child of this job process that waits for them) and then
        in fresh children; returns the last child if it parked (`park`) after the last probe."""
        run = RunningJob(job)
        remaining = [name for name in job["probes"] if name in self.slot.probes]
        if job.get("mode") not in self.slot.modes:  # a grader bug: no probe can run
            for name in remaining:
                self.outbox.post(run.status(name, "crash"))
            remaining = []
        kept = None
        try:
            while remaining:
                if time.monotonic() >= run.submission_end:
                    for name in remaining:
                        self.outbox.post(run.status(name, "timeout"))
                    break
                self._skip_spent_modules(run, remaining)
                if remaining:
                    used, parked = parked, None
                    remaining, kept = self._run_child(run, remaining, used, park)
        finally:
            if parked is not None:
                self.end(parked)  # never used: no probe of the job was left to run
        return kept

    def _skip_spent_modules(self, run: RunningJob, remaining: list[str]) -> None:
        """Report the probes whose module has no time left "module-timeout", and drop them."""
        for name in [name for name in remaining if run.module_time(name) <= 0]:
            self.outbox.post(run.status(name, "module-timeout", module=module_of(name)))
            remaining.remove(name)

    def _run_child(
        self, run: RunningJob, remaining: list[str], parked: Child | None, park: bool
    ) -> tuple[list[str], Child | None]:
        """Run the remaining probes in `parked` (continued) or in a freshly forked child; returns the
        probes still to run afterwards, and the child if it parked after the last one (`park`)."""
        kills = self.slot.ooms() if self.slot.ooms else 0  # a parked child's kill would have ended it
        its = self._child_for(run.job, remaining, parked, park)
        limits = run.limits
        clock = ProbeClock(
            its.pid,
            self.uid if os.getuid() == 0 else None,
            limits["probe_seconds"],
            limits["probe_wall_seconds"],
            run.submission_end,
        )
        remaining = list(remaining)
        started_with = len(remaining)
        kept = None
        try:
            failure, current, importing = Watch(its.reader, clock, run, remaining, self.outbox, self._strays).watch()
            if park and failure is None and not remaining and self._parked(its, clock):
                kept = its
        finally:
            status = self.end(its) if kept is None else 0
        if not remaining:
            return [], kept
        if current is None and len(remaining) < started_with:
            return remaining, None  # ended between two probes after some results: the rest goes to a new child
        if self.slot.ooms and self.slot.ooms() > kills:
            failure = "memory"  # the kernel stopped it: the submission's processes used up its memory group
        self._child_failed(run, remaining, failure or _outcome_of_exit(status), current, importing, clock)
        return remaining, None

    def _child_for(self, job: dict, remaining: list[str], parked: Child | None, park: bool) -> Child:
        """`parked`, given the probes, if it can take them; else a freshly forked child."""
        if parked is not None and not _continue(parked, job, remaining, park):
            self.end(parked)  # before any other child exists: its clean-up kills the slot's every process
            parked = None
        return parked or self._fork(job, remaining, park)

    def _child_failed(
        self,
        run: RunningJob,
        remaining: list[str],
        failure: str,
        current: str | None,
        importing: str | None,
        clock: ProbeClock,
    ) -> None:
        """A child that ended without all its results: the probe it was running (or, if it made no
        progress, the next one) gets its failure, and a module it failed to import is not imported
        again by the job's later children."""
        culprit = current if current in remaining else remaining[0]  # a child that made no progress
        self.outbox.post(run.status(culprit, failure, module=importing or ""))
        remaining.remove(culprit)
        if importing and not (failure == "timeout" and clock.cut_short):
            # an import that ran out of what was left of a module's time is not known to hang: the
            # next module that needs it tries again on its own time (sec3_6 imports sec3_5)
            self.poisoned[importing] = "resource" if failure == "memory" else failure

    def _fork(self, job: dict, remaining: list[str], park: bool) -> Child:
        """A fresh child from the fork server, its job already in its command pipe (a few kB:
        within the pipe's buffer)."""
        first = {
            "job": {key: job[key] for key in ("id", "mode", "limits", "track") if key in job}
            | {"files": list(job["files"])},
            "probes": remaining,
            "poisoned": self.poisoned,
            "scratch": self.scratch,
            "park": park,
        }
        read_fd, write_fd = os.pipe()
        command_read, command_write = os.pipe()
        try:
            command = json.dumps(first).encode() + b"\n"
            if os.write(command_write, command) != len(command):
                raise OSError("the child's job did not fit its command pipe")
            if not park:
                os.close(command_write)
                command_write = -1
            pid = self.slot.forker.fork(write_fd, command_read)
        except BaseException:
            for fd in (read_fd, command_write):
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            os.close(write_fd)
            os.close(command_read)
        return Child(pid, read_fd, command_write)

    def end(self, its: Child) -> int:
        """Kill the child and everything it started, have them reaped, clear what they left; its
        wait status. The outbox is written once the child is dead and reaped; a write that fails
        (the pool gone) still leaves nothing of the child's behind."""
        os.close(its.read_fd)
        if its.command_fd >= 0:
            os.close(its.command_fd)
        try:
            cleanup.kill_all(self.uid, its.pid, self.slot.pid_namespace, set(self.slot.spared))
            return self.slot.forker.ended()  # reaped by the fork server, with every orphan
        finally:
            try:
                self.outbox.flush()
            finally:
                cleanup.clear_leftovers(self.uid, self.scratch)
                cleanup.clear_ipc(self.uid)

    def _strays(self, child: int) -> bool:
        return cleanup.strays(child, self.slot.forker.server_pid)

    def _parked(self, its: Child, clock: ProbeClock) -> bool:
        """Whether the child, after its last result, parked (see `child`) with nothing of its own
        left running (one thread, no process); if so it stays stopped (SIGSTOP) until `_continue`."""
        try:
            header = its.reader.header(clock)
        except (TimeoutError, ChannelError, OSError):
            return False
        if (
            header is None
            or header.get("kind") != "parked"
            or header["size"]
            or not cleanup.alone(its.pid)
            or self._strays(its.pid)
        ):
            return False
        os.kill(its.pid, signal.SIGSTOP)
        stop_by = time.monotonic() + STOP_SECONDS
        while True:  # never a blocking wait: a SIGCONT from elsewhere could undo the stop before it is seen
            state = cleanup.state_of(its.pid)
            if state != b"R" and state != b"S" and state != b"D":
                break
            if time.monotonic() >= stop_by:
                return False
            time.sleep(0.0002)
        if state != b"T":
            return False  # ended meanwhile
        # stopped: nothing of it can start a thread or a process any more; with none, nothing but the
        # watcher can continue it (the slot's other processes are its descendants)
        return cleanup.alone(its.pid) and not self._strays(its.pid)


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


def _outcome_of_exit(status: int) -> str:
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) in (FAILED, NOT_DROPPED, NO_NAMESPACE):
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
