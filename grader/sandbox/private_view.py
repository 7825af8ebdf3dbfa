"""Without bubblewrap, as root: the warm worker's own mount namespace, so that its children see the
host's files as bubblewrap would have shown what matters most. The answer key and the grader's
folders (the kit's checkout, the class, the reports with the reference's cached outputs) are
covered with empty tmpfs; /tmp is a fresh, bounded tmpfs and the other folders anyone may write
to are empty and read-only; and the interpreter's directories are reachable by the sandbox's uid
even where they lie under a private folder (pyenv under /root, mode 0700): the topmost such folder
is covered with an empty tmpfs too, and the interpreter's directories are bound back into it,
read-only, at the same paths; /proc shows a child only its own processes. The host's other
files stay visible. Every child inherits the namespace; none can undo it (a mount
propagated into a less privileged namespace is locked, and the children are not root).

Copied into the sandbox: standard library only.
"""

from __future__ import annotations

import ctypes
import os
import stat

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
O_PATH = getattr(os, "O_PATH", 0o10000000)
# Besides /tmp, the folders any process may write to: empty and read-only here, as in bubblewrap
# (a child could otherwise fill the machine's memory through /dev/shm, or leave files for the next)
SHARED_DIRS = ("/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


class ViewFailed(OSError):
    """The mount namespace could not be made as asked (no CAP_SYS_ADMIN, e.g. in a container)."""


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if LIBC.mount(encode(source), encode(target), encode(kind), flags, encode(data)) != 0:
        errno = ctypes.get_errno()
        raise ViewFailed(errno, f"mount {target}: {os.strerror(errno)}")


def unreachable_folders(roots: list[str]) -> list[str]:
    """The topmost folders on the way to `roots` that other users cannot pass through."""
    found = []
    for root in roots:
        parts = root.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                found.append(folder)
                break
    return sorted(set(found))


def _make_passable(path: str) -> None:
    """PATH and every folder made on the way to it: mode 0711, passable but not listable (a kit
    checked out under /tmp has its .venv bound back into the fresh /tmp: the checkout's folder
    made for it must not be listable by the children)."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        current = os.path.join(current, part)
        if not os.path.isdir(current):
            os.mkdir(current, 0o711)
            os.chmod(current, 0o711)


def make(roots: list[str], covers: list[str], hidden: list[str], keep: list[str], tmp_bytes: int) -> None:
    """Enter a mount namespace of this process's own (see the module's docstring). `covers` and
    the folders other users cannot pass on the way to `roots` become empty folders (mode 0711,
    read-only); /tmp becomes an empty tmpfs of `tmp_bytes` that only root may write to (where the
    watcher makes each submission's scratch folder), as in bubblewrap; `roots` and `keep` (the
    staged probe code) are bound back at their paths, read-only; `hidden` folders and the other
    folders every process may write to become empty and read-only. Raises ViewFailed."""
    if LIBC.unshare(CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise ViewFailed(errno, f"unshare: {os.strerror(errno)}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    wanted = sorted({*covers, *unreachable_folders(roots), "/tmp"}, key=len)
    outermost = [c for c in wanted if not any(c.startswith(other + "/") for other in wanted)]
    inside = [path for path in [*roots, *keep] if any(path.startswith(cover + "/") for cover in outermost)]
    handles = {path: os.open(path, O_PATH | os.O_DIRECTORY) for path in inside}
    try:
        for cover in outermost:
            if cover == "/tmp":
                _mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0755,size={tmp_bytes}")
            else:
                _mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0711,size=1m")
        for path in inside:
            _make_passable(path)
            _mount(f"/proc/self/fd/{handles[path]}", path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        for cover in outermost:
            if cover != "/tmp":
                _mount(None, cover, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    finally:
        for handle in handles.values():
            os.close(handle)
    for path in [*hidden, *SHARED_DIRS]:
        if os.path.isdir(path) and not os.path.islink(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0711,size=4k")
    _hide_processes()
    os.chdir("/")  # the grader's folder (the kit's checkout, perhaps) is no longer this process's cwd


def _hide_processes() -> None:
    """A /proc of this namespace's own in which a process sees only the processes it may inspect
    (its own): not the host's command lines. Only where each mount of proc has its own options
    (Linux 5.8+); on older kernels the option would change the host's /proc. Best effort."""
    try:
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    except ValueError:
        return
    if (major, minor) < (5, 8):
        return
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    except ViewFailed:
        pass
