"""After a child: every process it started is killed and reaped, and what it left where the next
student's child could find it is removed. The watcher kills and clears, the fork server (the
children's parent, and the subreaper of their orphans) reaps (see `worker`). Copied into the
sandbox: standard library only."""

from __future__ import annotations

import os
import shutil
import signal
import time

# Folders any process may write to, where a child could leave something for the next student when
# the sandbox has no private /tmp (without bubblewrap; with it the child can write only its scratch).
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")


def kill_all(uid: int, pid: int, pid_namespace: bool, spared: set[int]) -> None:
    """Kill the child and everything it spawned, without forking (a fork of a torch process is slow).

    Called in the watcher, before the child is reaped (so that `pid` is still the child's). In
    bubblewrap's pid namespace, every process of the namespace but the `spared` ones (bubblewrap's
    init, the watcher, the fork server) is the child or one of its descendants, whatever session or
    process group they moved to: all are killed, pass after pass, until none is left. Without a pid
    namespace, as root, every process of the slot's uid is. A fork bomb is bounded by RLIMIT_NPROC.
    Without either, only the child's session is reachable (reported as a missing protection).
    """
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill_descendants(uid, pid_namespace, spared)


def strays(child: int, parent: int) -> bool:
    """Whether a process the child started has left its family (a double fork: its orphans come
    to the fork server `parent`, their subreaper) while the child lives on; see `child.left_behind`."""
    try:  # asked after every result: the list stays open
        listed = os.pread(_children_of(parent), 1 << 16, 0)
        return any(int(pid) != child for pid in listed.split())
    except (OSError, ValueError):
        return False  # a kernel without the children list: found when the child ends


_children: dict[int, int] = {}  # pid -> a descriptor of its list of children


def _children_of(pid: int) -> int:
    """A descriptor of a (single-threaded) process's /proc children list, read again from its start
    each time, opened once (the children close every descriptor they inherit)."""
    if pid not in _children:
        _children[pid] = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY | os.O_CLOEXEC)
    return _children[pid]


def alone(pid: int) -> bool:
    """Whether the process has a single thread and no (live or unreaped) child process."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        if tasks != [str(pid)]:
            return False
        with open(f"/proc/{pid}/task/{pid}/children") as listed:
            return not listed.read().split()
    except OSError:
        return False  # cannot tell: as if it were not


def _kill_descendants(uid: int, pid_namespace: bool, spared: set[int]) -> None:
    if pid_namespace:
        _kill_until_none(lambda entry: int(entry) not in spared)
    elif os.getuid() == 0:
        _kill_until_none(lambda entry: int(entry) not in spared and os.stat(f"/proc/{entry}").st_uid == uid)


def _kill_until_none(chosen) -> None:
    """Pass after pass until one finds no process it has not killed yet. A killed process forks no
    more (the kernel refuses a fork with a fatal signal pending), so a pass that finds only those
    already killed (still tearing down their memory, not yet zombies) is the last: no busy loop
    for as long as a torch process takes to exit. Pids are not reused meanwhile (killed processes
    stay until reaped, and a new pid would take the whole pid range to come back)."""
    killed: set[str] = set()
    for _ in range(100):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or entry in killed:
                continue
            try:
                if chosen(entry) and not _is_zombie(entry):  # a zombie is dead already: reaped later
                    found = True
                    os.kill(int(entry), signal.SIGKILL)
                    killed.add(entry)
            except (OSError, ValueError, IndexError):
                pass
        if not found:
            break


def _is_zombie(entry: str) -> bool:
    """Whether every thread of the process has ended. A leader that ended its main thread alone
    (SYS_exit) shows "Z" in /proc/<pid>/stat while its other threads run on: not dead."""
    if _thread_state(f"/proc/{entry}/stat") != b"Z":
        return False
    return all(_thread_state(f"/proc/{entry}/task/{task}/stat") == b"Z" for task in os.listdir(f"/proc/{entry}/task"))


def state_of(pid: int) -> bytes:
    """The process's state letter (R, S, D, T, Z...); X once it is gone."""
    try:
        return _state(f"/proc/{pid}/stat")
    except (OSError, IndexError):
        return b"X"


def _thread_state(path: str) -> bytes:
    try:
        return _state(path)
    except FileNotFoundError:  # a thread that ended meanwhile
        return b"Z"


def _state(path: str) -> bytes:
    with open(path, "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0]


def reap_orphans(uid: int, pid_namespace: bool, spared: set[int], seconds: float = 2.0) -> None:
    """Collect every descendant of the child (the fork server is their subreaper), waiting for
    those still dying. Until it is reaped, a killed process counts against the slot uid's
    RLIMIT_NPROC: left behind, a fork bomb's processes would leave the next child of the same
    submission no room for the threads its framework starts (MindSpore's first op), costing
    correct modules their points. Bounded: where nothing can kill a descendant (no root, no pid
    namespace; reported as a missing protection), the next child starts after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no descendant left
        if pid:
            continue
        if time.monotonic() >= deadline:
            return
        _kill_descendants(uid, pid_namespace, spared)  # one forked between the last pass and its kill
        time.sleep(0.001)


IPC_RMID = 0
# /proc/sysvipc table -> its id column and the libc call that removes one of its objects
IPC_TABLES = {"shm": ("shmid", "shmctl"), "sem": ("semid", "semctl"), "msg": ("msqid", "msgctl")}


def clear_ipc(uid: int) -> None:
    """Remove the System V IPC objects the slot's uid owns in this IPC namespace. Children get one
    of their own; where they cannot (root without CAP_SYS_ADMIN) this is what keeps a segment,
    semaphore or queue of one student from the next. Only as root (see `clear_leftovers`)."""
    if os.getuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for table, (column, call) in IPC_TABLES.items():
        try:
            with open(f"/proc/sysvipc/{table}") as rows:
                header, *lines = rows.read().splitlines()
        except (OSError, ValueError):
            continue
        names = header.split()
        for line in lines:
            fields = dict(zip(names, line.split()))
            try:
                if int(fields["uid"]) == uid:
                    if call == "semctl":  # semctl(id, semnum, cmd); the others (id, cmd, buffer)
                        libc.semctl(int(fields[column]), 0, IPC_RMID)
                    else:
                        getattr(libc, call)(int(fields[column]), IPC_RMID, None)
            except (KeyError, ValueError):
                pass


def clear_leftovers(uid: int, scratch: str) -> None:
    """Remove what a child of the slot's uid left in the folders every process may write to (and
    in their world-writable subfolders, such as /tmp/.X11-unix), so that the next student's child
    finds nothing of it; the scratch folder stays for the rest of this submission. Every process of
    the uid is dead by now. Only as root: otherwise the child runs as the grading user, whose own
    files cannot be told apart (reported as no uid separation)."""
    if os.getuid() != 0:
        return
    folders = list(SHARED_DIRS)
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                status = entry.stat(follow_symlinks=False)
                if entry.path == scratch:
                    continue
                if status.st_uid != uid:
                    if entry.is_dir(follow_symlinks=False) and status.st_mode & 0o002 and folder in SHARED_DIRS:
                        folders.append(entry.path)  # another owner's folder anyone may write to
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
