"""The warm worker: imports torch once, then forks one restricted child per submission.

Started by a fresh exec (never a fork of the grader, which holds the solutions), inside bubblewrap
where available. Protocol with the trusted pool:
  stdin  <- one JSON line per job: {"id", "files": {name: base64}, "probes": [...], limits...}
  result fd -> frames: 4-byte big-endian header length, JSON header, then header["size"] payload bytes.
Headers: {"id", "probe", "status": "ok"} + the child's serialised result, or {"id", "probe",
"status": "timeout"|"crash"|"resource"|"exit", ...} with no payload, and {"id", "status": "done"}.
The worker never deserialises what a child sends: it forwards the bytes for the trusted side to
decode with `codec` (JSON plus raw tensor bytes: no pickle).
"""
from __future__ import annotations

import base64
import ctypes
import gc
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time

import torch

torch.set_num_threads(1)  # a forked child of a multi-threaded parent can hang in OpenMP

from grader.probes import load_all  # noqa: E402
from grader.sandbox import driver  # noqa: E402

PROBES = load_all()
RESULT_FD = 3
MAX_PAYLOAD = 32 * 1024 * 1024
MAX_HEADER = 64 * 1024
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PID_NAMESPACE = False  # set from --pid-namespace: the worker runs in its own pid namespace
CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once here, not in every child


# Imported before forking: children start faster, and a child that cannot read the interpreter's
# directory (no bubblewrap, a uid without access to a private prefix such as /root/.pyenv) still
# finds the modules students commonly import.
PRELOAD = ("math", "random", "itertools", "functools", "collections", "dataclasses", "typing", "copy",
           "json", "re", "time", "inspect", "warnings", "socket", "encodings.idna", "numpy",
           "torch.nn.functional", "torch.testing")


def _warm_up() -> None:
    """Exercise the code paths every submission uses, so that forked children start hot."""
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    layer = torch.nn.Linear(4, 4)
    x = torch.randn(2, 3, 4)
    (torch.softmax(layer(x) @ x.transpose(1, 2), dim=-1).sum()).backward()
    driver.serialise({"ok": {"x": x}})
    from grader.probes import exercise3_3_gpt2_attention

    exercise3_3_gpt2_attention.prepare()  # GPT-2-size weights: made once here, shared by every child
    # Everything allocated so far lives as long as the worker: move it out of the collector's reach,
    # so that a collection in a child never writes to (and so copies) the pages it shares with us.
    gc.collect()
    gc.freeze()
    _use_huge_pages()


MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 << 20


def _use_huge_pages() -> None:
    """Back the warm worker's anonymous memory with 2 MB pages, so that forking a child is cheap.

    A fork copies one page-table entry per mapped 4 kB page of private memory, and the child's
    exit drops them again: with torch loaded that is ~160 MB, some 40,000 entries, and it cost
    about 20 ms of CPU per submission on a 2-core VM, more than most submissions' probes. Huge
    pages cut it to ~6 ms. A child that writes to a shared huge page gets 4 kB copies, as before.
    Best effort: on kernels without MADV_COLLAPSE or with huge pages disabled nothing changes.
    """
    madvise = LIBC.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        anonymous = len(fields) < 6 or fields[5] == "[heap]"
        if not (fields[1].startswith("rw") and anonymous):
            continue
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end > start:
            madvise(start, end - start, MADV_COLLAPSE)


def send(header: dict, payload: bytes = b"") -> None:
    header = dict(header, size=len(payload))
    data = json.dumps(header).encode()
    view = memoryview(struct.pack(">I", len(data)) + data + payload)  # one write: one wake-up of the pool
    while view:
        view = view[os.write(RESULT_FD, view):]


class _Reader:
    """Reads from a pipe with a deadline, buffered: one read takes every frame already written."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def read_exact(self, count: int, deadline: float) -> bytes | None:
        """`count` bytes; None at end of file; TimeoutError when they do not come in time."""
        while len(self.buffer) < count:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([self.fd], [], [], timeout)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, min(max(count - len(self.buffer), 1 << 16), 1 << 20))
            if not chunk:
                return None
            self.buffer += chunk
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data


def _restrict(uid: int, limits: dict) -> list[str]:
    """Called in the child before any student code runs. Returns protections that were unavailable."""
    missing = []
    os.setsid()
    limits_set = {
        resource.RLIMIT_CPU: limits["cpu_seconds"],
        resource.RLIMIT_FSIZE: limits["file_bytes"],
        resource.RLIMIT_NOFILE: 256,
        resource.RLIMIT_CORE: 0,
        # torch's libraries already take a few hundred MB of address space: the budget comes on top
        resource.RLIMIT_AS: _vm_size() + limits["memory_bytes"],
        # tasks (processes and threads) of the real uid: a slot's own uid when running as root,
        # otherwise the grading user's, whose existing tasks count too
        resource.RLIMIT_NPROC: limits["processes"] + (0 if os.getuid() == 0 else _tasks_of(os.getuid())),
    }
    for which, value in limits_set.items():
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            missing.append(f"rlimit-{which}")
    libc = LIBC
    if not limits.get("network_isolated"):
        if os.getuid() != 0 or libc.unshare(CLONE_NEWNET) != 0:
            missing.append("network")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        missing.append("no_new_privs")
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            os._exit(71)  # never run student code as root
    else:
        missing.append("uid")
    return missing


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _tasks_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count


def _child(job: dict, remaining: list[str], poisoned: dict[str, str], scratch: str, write_fd: int, uid: int) -> None:
    """The restricted child: runs the student's code and writes one frame per probe."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    # nothing but the result pipe: not the pool's channel, not the job channel, nothing inherited
    os.closerange(3, write_fd)
    os.closerange(write_fd + 1, 1 << 16)
    _restrict(uid, job["limits"])
    os.chdir(scratch)
    ns = driver.StudentNamespace(scratch, poisoned, on_import=lambda module: _emit(write_fd, "import", module),
                                 on_imported=lambda module: _emit(write_fd, "imported", module))
    result = b""
    for name in remaining:
        # a probe's result and the next one's start go in one write (one wake-up of the worker)
        _emit(write_fd, "start", name, before=result)
        payload = driver.serialise(driver.run_probe(PROBES[name], ns, scratch))
        result = _frame("result", name, payload)
    _write_all(write_fd, result)
    os._exit(0)


def _frame(kind: str, name: str, payload: bytes = b"") -> bytes:
    head = json.dumps({"kind": kind, "name": name, "size": len(payload)}).encode()
    return struct.pack(">I", len(head)) + head + payload


def _emit(fd: int, kind: str, name: str, payload: bytes = b"", before: bytes = b"") -> None:
    _write_all(fd, before + _frame(kind, name, payload))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _kill_all(uid: int, pid: int) -> None:
    """Kill the child and everything it spawned, without forking (a fork of a torch process is slow).

    In bubblewrap's pid namespace, kill(-1) reaches every process of the namespace except this
    worker and bubblewrap's init: exactly the child and its descendants, whatever session or
    process group they moved to. Without a pid namespace, as root, every process of the slot's uid
    is killed, pass after pass, until none is left (a fork bomb is bounded by RLIMIT_NPROC).
    Without either, only the child's session is reachable (reported as a missing protection).
    """
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if PID_NAMESPACE:
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    elif os.getuid() == 0:
        for _ in range(100):
            found = False
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) == os.getpid():
                    continue
                try:
                    if os.stat(f"/proc/{entry}").st_uid == uid:
                        found = True
                        os.kill(int(entry), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            if not found:
                break


def _reap_orphans() -> None:
    """Collect zombies of the child's descendants (this worker is their subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _outcome_of_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum == signal.SIGXCPU:
            return "timeout"
        if signum in (signal.SIGXFSZ, signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS):
            return "resource"
        return "crash"
    return "exit"


def run_job(job: dict, uid: int) -> None:
    scratch = tempfile.mkdtemp(prefix="submission-")
    for name, data in job["files"].items():
        with open(os.path.join(scratch, os.path.basename(name)), "wb") as handle:
            handle.write(base64.b64decode(data))
    if os.getuid() == 0:
        os.chown(scratch, uid, uid)
        for name in os.listdir(scratch):
            os.chown(os.path.join(scratch, name), uid, uid)
    remaining = [name for name in job["probes"] if name in PROBES]
    poisoned: dict[str, str] = {}
    submission_deadline = time.monotonic() + job["limits"]["submission_seconds"]
    try:
        while remaining:
            if time.monotonic() > submission_deadline:
                for name in remaining:
                    send({"id": job["id"], "probe": name, "status": "timeout"})
                break
            remaining = _run_child(job, remaining, poisoned, scratch, uid, submission_deadline)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    send({"id": job["id"], "status": "done"})


def _read_frame(reader: _Reader, deadline: float) -> tuple[dict, bytes] | None:
    """One frame from the child, None at end of file; ValueError for garbage, TimeoutError."""
    head = reader.read_exact(4, deadline)
    if head is None:
        return None
    length = struct.unpack(">I", head)[0]
    if length > MAX_HEADER:
        raise ValueError("header too long")
    raw = reader.read_exact(length, deadline)
    if raw is None:
        return None
    header = json.loads(raw)
    if type(header) is not dict or type(header.get("size", 0)) is not int or header.get("size", 0) < 0:
        raise ValueError("not a frame header")
    size = header.get("size", 0)
    if size > MAX_PAYLOAD:
        raise OverflowError
    payload = reader.read_exact(size, deadline) if size else b""
    if payload is None:
        return None
    return header, payload


def _run_child(job, remaining, poisoned, scratch, uid, submission_deadline) -> list[str]:
    """Fork one child for the remaining probes; returns the probes still to run afterwards."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            _child(job, remaining, poisoned, scratch, write_fd, uid)
        finally:
            os._exit(70)
    os.close(write_fd)
    reader = _Reader(read_fd)
    remaining = list(remaining)
    current, importing = None, None
    failure = None
    probe_seconds = job["limits"]["probe_seconds"]
    deadline = min(time.monotonic() + probe_seconds, submission_deadline)
    try:
        while remaining:
            try:
                frame = _read_frame(reader, deadline)
            except TimeoutError:
                failure = "timeout"
                break
            except OverflowError:
                failure = "resource"  # an output larger than MAX_PAYLOAD
                break
            except (ValueError, TypeError):
                failure = "crash"  # garbage written to the result pipe
                break
            if frame is None:
                break
            header, payload = frame
            kind, name = header.get("kind"), header.get("name")
            if kind == "start" and name in remaining:
                current, importing = name, None
                deadline = min(time.monotonic() + probe_seconds, submission_deadline)
            elif kind == "import" and type(name) is str:
                importing = name
            elif kind == "imported":
                importing = None
            elif kind == "result" and name in remaining and name == current:
                send({"id": job["id"], "probe": name, "status": "ok"}, payload)
                remaining.remove(name)
                current, importing = None, None
    finally:
        os.close(read_fd)
        _kill_all(uid, pid)
        _, status = os.waitpid(pid, 0)
        _reap_orphans()
    if not remaining:
        return []
    if failure is None:
        failure = _outcome_of_exit(status)
    culprit = current if current in remaining else remaining[0]
    send({"id": job["id"], "probe": culprit, "status": failure, "module": importing or ""})
    remaining.remove(culprit)
    if importing:
        poisoned[importing] = failure
    return remaining


def main() -> None:
    global RESULT_FD, PID_NAMESPACE
    uid = int(sys.argv[sys.argv.index("--uid") + 1]) if "--uid" in sys.argv else 65534
    RESULT_FD = int(sys.argv[sys.argv.index("--result-fd") + 1])
    # bubblewrap's init is pid 1 of the new namespace and this worker pid 2; outside a pid
    # namespace pid 2 is never a Python process, so kill(-1) can never reach the host
    PID_NAMESPACE = "--pid-namespace" in sys.argv and os.getpid() <= 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _warm_up()
    send({"status": "ready"})
    for line in sys.stdin:
        if line.strip():
            run_job(json.loads(line), uid)


if __name__ == "__main__":
    main()
