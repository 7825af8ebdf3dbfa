"""The restricted child: forked from the warm worker's fork server for one submission, it reads its
job from its command pipe (written by the watcher), drops every privilege and every shared
resource before any student code runs, then runs the probes and writes one frame per probe to the
watcher (see `worker`).

Frames to the worker, in this order per probe: {"kind": "start", "name": probe}, any number of
{"kind": "import", "name": module} / {"kind": "imported", ...} pairs, then {"kind": "result",
"name": probe} with the probe's record (`driver.serialise`) as payload.

A child whose job says "park" (a job the trusted side may follow up, `worker`) does not end after
its last probe: it sends {"kind": "parked"} and waits, every signal blocked, for one command line
{"mode", "probes", "park"} (the same submission's next probes, e.g. the failed ones traced), or
for the end of the pipe. The worker stops it (SIGSTOP) while it waits.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import stat
import sys
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

from grader.frameworks import namespace_for
from grader.sandbox import driver, oom, seccomp
from grader.sandbox.channel import frame, frame_head, write_all
from grader.sandbox.forks import FAILED, NO_NAMESPACE, NOT_DROPPED

PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 1, 2, 4, 16384, 1 << 18
LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once in the worker, not in every child
SMALL = 64 * 1024
KEYRINGS_BLOCKED = False  # set by `block_keyrings` in the worker, whose filter every child inherits
MEMORY_GROUP = -1  # cgroup.procs of the slot's memory group, open in the worker (`block_keyrings`); -1: none
WORKER_MODULES: frozenset[str] = frozenset()  # the fork server's modules (`remember_worker_modules`)
__all__ = ["FAILED", "NOT_DROPPED", "NO_NAMESPACE", "run", "serve"]


def serve(write_fd: int, command_fd: int, uid: int, probes: Mapping) -> None:
    """A freshly forked child: its job is the first line of its command pipe, {"job": {"id", "mode",
    "track", "limits", "files": [file names]}, "probes": [...], "poisoned": {module: failure},
    "scratch": folder, "park": bool} (from the watcher, the trusted side of the sandbox); then
    `run`. Never returns."""
    first = json.loads(_read_line(command_fd))
    if not first["park"]:
        os.close(command_fd)
        command_fd = -1
    run(first["job"], first["probes"], first["poisoned"], first["scratch"], write_fd, uid, probes, command_fd)


def run(
    job: dict,
    remaining: list[str],
    poisoned: dict[str, str],
    scratch: str,
    write_fd: int,
    uid: int,
    probes: Mapping,
    command_fd: int = -1,
) -> None:
    """The child's whole life: restrict, then one frame per probe (and, with a `command_fd`, the
    probes of each command that follows); never returns."""
    if MEMORY_GROUP >= 0 and not oom.join(MEMORY_GROUP):
        os._exit(FAILED)  # never run student code outside the submission's memory limit
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    # nothing but the result pipe (and the command pipe): not the pool's channel, not the job
    # channel, nothing inherited
    low = 3
    for kept in sorted(fd for fd in (write_fd, command_fd) if fd >= 0):
        os.closerange(low, kept)
        low = kept + 1
    os.closerange(low, 1 << 16)
    restrict(uid, job["limits"])
    os.chdir(scratch)
    # Everything the loop calls once student code has run is bound here, before it does: a student
    # module that reaches this module's globals (through any function of it, e.g. a callback the
    # stand-ins hold) and rebinds a name there changes nothing the loop runs. Python gives no
    # isolation inside a process (the garbage collector, frames and code objects stay reachable);
    # the hidden suites bound what that can earn (docs/architecture.md, "Trust boundary").
    loop = _Loop(
        dict(driver.MODES),
        driver.serialise,
        write_all,
        frame,
        frame_head,
        left_behind,
        driver.StudentNamespace,
        namespace_for,
    )
    namespace, run_probes, wait_for_command, forget_modules = (
        _namespace,
        _run_probes,
        _wait_for_command,
        _forget_modules,
    )
    exit_now = os._exit
    run_probe, park = loop.modes[job["mode"]], command_fd >= 0
    students = {os.path.splitext(os.path.basename(name))[0] for name in job["files"]}
    warm = WORKER_MODULES or frozenset(sys.modules)  # none of them comes from the scratch folder
    while True:
        ns = namespace(job.get("track", "pytorch"), scratch, poisoned, write_fd, loop)
        pending, all_run = run_probes(remaining, run_probe, probes, ns, scratch, write_fd, loop)
        loop.write_all(write_fd, pending)  # the last result, exactly as a child that does not park sends it
        if not (park and all_run):
            break
        try:
            command = wait_for_command(write_fd, command_fd, loop)
            remaining, run_probe, park = command["probes"], loop.modes[command["mode"]], command["park"]
            forget_modules(os.path.realpath(scratch), students, warm)
        except BaseException:  # noqa: BLE001 - whatever the code under test broke: the worker uses a fresh child
            break
    exit_now(0)


class _Loop(NamedTuple):
    """What the child's loop calls after student code has run, bound before it runs (see `run`)."""

    modes: dict
    serialise: Callable
    write_all: Callable
    frame: Callable
    frame_head: Callable
    left_behind: Callable
    student_namespace: Callable
    namespace_for: Callable


def _namespace(track: str, scratch: str, poisoned: dict[str, str], write_fd: int, loop: _Loop):
    write, frame_of = loop.write_all, loop.frame
    ns = loop.student_namespace(
        scratch,
        poisoned,
        on_import=lambda module: write(write_fd, frame_of({"kind": "import", "name": module})),
        on_imported=lambda module: write(write_fd, frame_of({"kind": "imported", "name": module})),
    )
    return loop.namespace_for(track, ns)  # MindSpore code behind the adapter's facades


def _forget_modules(directory: str, students: set[str], warm: frozenset[str]) -> None:
    """The next command's probes import the student's modules afresh, as a new child would: their
    module-level code runs (and is traced) again, and nothing an earlier probe left in them counts.
    Forgotten: the submission's modules by name (whatever `__file__` they claim), and any other
    module imported from the scratch folder since the child started (only those are looked at:
    the worker's thousand-odd modules cost a millisecond to walk)."""
    for name in students:
        sys.modules.pop(name, None)
    for name, module in [(name, module) for name, module in sys.modules.items() if name not in warm]:
        try:
            file = getattr(module, "__file__", None)
            if type(file) is str and os.path.dirname(file) == directory:  # imported from there (sys.path)
                del sys.modules[name]
        except Exception:  # noqa: BLE001 - a module whose attributes cannot be read is none of the student's files
            pass


def _run_probes(
    remaining: list[str], run_probe, probes: Mapping, ns, scratch: str, write_fd: int, loop: _Loop
) -> tuple[bytes, bool]:
    """One frame per probe; returns the last result's frame (still to write) and whether every
    probe ran (False: this child left something behind and must end, see `left_behind`)."""
    pending = b""
    for name in remaining:
        # a probe's (small) result and the next one's start go in one write: one wake-up of the worker
        loop.write_all(write_fd, pending + loop.frame({"kind": "start", "name": name}))
        payload = loop.serialise(run_probe(probes[name], ns, scratch))
        pending = loop.frame_head({"kind": "result", "name": name}, len(payload))
        if len(payload) > SMALL:
            loop.write_all(write_fd, pending)
            loop.write_all(write_fd, payload)  # never copied
            pending = b""
        else:
            pending += payload
        if loop.left_behind():
            return pending, False  # the worker starts a fresh child for the probes after this one
    return pending, True


def _wait_for_command(write_fd: int, command_fd: int, loop: _Loop) -> dict:
    """Say "parked" (after the last result) and read the next command (EOFError at the end of the
    pipe). No handler of the code under test runs meanwhile: every signal stays blocked until the
    command is in (the worker stops this child while it waits, and continues it with the command)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    loop.write_all(write_fd, loop.frame({"kind": "parked"}))
    line = _read_line(command_fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return json.loads(line)


def _read_line(fd: int) -> bytes:
    """One command line (EOFError at the end of the pipe)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError
        line += chunk
    return line


def left_behind() -> bool:
    """Whether the probe that just ended left threads or processes of its own (zombies included)
    behind. They count against RLIMIT_NPROC for as long as this child lives: a few of them leave
    the later probes no room for the threads their framework starts (MindSpore's first op needs
    about 6 tasks of `Limits.processes`), costing correct modules their points. Processes that
    left this child's family (double fork) are the worker's to find (`cleanup.strays`)."""
    if threading.active_count() > 1:  # the kit starts none, nor do torch and MindSpore (native threads)
        return True
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False  # no child process at all
        if not pid:
            return True  # one still running


def restrict(uid: int, limits: dict) -> list[str]:
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
    if not isolate_ipc():
        missing.append("ipc")
    if MEMORY_GROUP < 0 and not cover_shared_folder():  # with a group, its files count
        missing.append("dev-shm")
    if not limits.get("network_isolated") and (os.getuid() != 0 or LIBC.unshare(CLONE_NEWNET) != 0):
        missing.append("network")
    if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        missing.append("no_new_privs")
    if not KEYRINGS_BLOCKED:
        missing.append("keyrings")
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            os._exit(NOT_DROPPED)  # never run student code as root
    else:
        missing.append("uid")
    return missing


def remember_worker_modules() -> None:
    """Once in the fork server, after its warm-up: the modules every child starts with (`run`).
    Taken there, not in each child: a set of the ~2,000 names made in a child writes to every name's
    reference count, and so copies the pages they lie on, about 600 pages per submission."""
    global WORKER_MODULES
    WORKER_MODULES = frozenset(sys.modules)


def block_keyrings(memory_group: int = -1) -> None:
    """Install the keyring filter (`seccomp`) once, in the worker before it forks: every child
    inherits it, at no cost per child. The worker never executes another program, so it can
    give up gaining privileges (which an unprivileged filter needs). Without a memory group
    (`memory_group`: its cgroup.procs, or -1) the filter refuses memfd_create, shmget and msgget
    too: a memfd's or a System V segment's pages count against no limit of a process (RLIMIT_AS
    counts only what is mapped), nor do message queues (up to 512 MB in an IPC namespace)."""
    global KEYRINGS_BLOCKED, MEMORY_GROUP
    MEMORY_GROUP = memory_group
    LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    KEYRINGS_BLOCKED = seccomp.install(LIBC, uncounted=memory_group < 0)


def isolate_ipc() -> bool:
    """A fresh IPC namespace for this child: System V shared memory, semaphores and message queues
    and POSIX message queues of earlier children (other students) are invisible, and whatever
    this child creates disappears with it. As root, one unshare(); otherwise inside a new user
    namespace that maps this process's own uid and gid to themselves (files keep their owners)."""
    if LIBC.unshare(CLONE_NEWIPC) == 0:
        return True
    if os.getuid() == 0:
        # root without CAP_SYS_ADMIN (a container): a user namespace would map root alone, and the
        # change to the slot's uid that follows would fail, costing every probe of every student
        return False
    uid, gid = os.getuid(), os.getgid()
    if LIBC.unshare(CLONE_NEWUSER | CLONE_NEWIPC) != 0:
        return False
    LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # after a change of uid, /proc/self is root's until this
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError:
        os._exit(NO_NAMESPACE)  # half-made namespace: the uid would be "nobody"; the worker reports a crash
    return True


def cover_shared_folder(folder: str = "/dev/shm") -> bool:
    """Where the host's /dev/shm is this child's to fill (no bubblewrap, no private view) and no
    memory group counts its files (they count against no limit of a process), cover it, as root,
    in a mount namespace of this child's own with an empty, read-only tmpfs (as the private view
    does; bubblewrap's is not writable by the children either). False where it stays open (not
    root, or no CAP_SYS_ADMIN)."""
    try:
        if not os.stat(folder).st_mode & stat.S_IWOTH:
            return True  # bubblewrap's or the private view's: closed already
    except OSError:
        return True  # no such folder
    if os.getuid() != 0 or LIBC.unshare(CLONE_NEWNS) != 0:
        return False
    mount = LIBC.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        os._exit(NO_NAMESPACE)  # a namespace whose mounts would reach the host's: never used
    flags = MS_NOSUID | MS_NODEV | MS_RDONLY
    return mount(b"tmpfs", folder.encode(), b"tmpfs", flags, b"mode=0711,size=4k") == 0


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
