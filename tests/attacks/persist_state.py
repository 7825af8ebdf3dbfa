"""Appended to a correct module: attention_scores either leaves state behind for whoever runs
next in the same worker (PERSIST = "leave"), or looks for it (PERSIST = "find"). The channels:
System V shared memory, semaphores and message queues, a POSIX message queue, a key in the
uid's keyrings, files in every folder any process may write to (and the scratch folder), and a
daemon holding an abstract unix socket. "leave" raises with what it managed to leave and what
it then found itself (so a finder that sees nothing is not simply blind); "find" returns the
correct scores only when it finds nothing."""
import ctypes
import os
import platform
import socket

PERSIST = "{PERSIST}"
KEY = 0x4B1700
NAME = "attention-kit-leak"
FILES = ["/tmp/" + NAME, "/var/tmp/" + NAME, "/dev/shm/" + NAME, "/run/lock/" + NAME, "../" + NAME, NAME,
         "/tmp/.attention-kit-open/" + NAME]  # a world-writable folder of another owner (made by the test)
IPC_CREAT, O_CREAT, O_RDWR = 0o1000, 0o100, 0o2
SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl
KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH = -4, 10

_libc = ctypes.CDLL(None, use_errno=True)
try:
    _mq_open = _libc.mq_open
except AttributeError:
    _mq_open = ctypes.CDLL("librt.so.1", use_errno=True).mq_open
_mq_open.restype = ctypes.c_int


def _leave() -> set:
    left = set()
    if _libc.shmget(KEY, 4096, IPC_CREAT | 0o666) >= 0:
        left.add("sysv-shm")
    if _libc.semget(KEY, 1, IPC_CREAT | 0o666) >= 0:
        left.add("sysv-sem")
    if _libc.msgget(KEY, IPC_CREAT | 0o666) >= 0:
        left.add("sysv-msg")
    if _mq_open(("/" + NAME).encode(), O_CREAT | O_RDWR, 0o666, None) >= 0:
        left.add("posix-mqueue")
    numbers = SYSCALLS.get(platform.machine())
    if numbers and _libc.syscall(numbers[0], b"user", NAME.encode(), b"secret", 6, KEY_SPEC_USER_KEYRING) >= 0:
        left.add("keyring")
    for path in FILES:
        try:
            with open(path, "w") as handle:
                handle.write("secret")
            left.add("file " + path)
        except OSError:
            pass
    if os.fork() == 0:  # a daemon: double fork, new session, an abstract socket
        try:
            os.setsid()
            if os.fork() == 0:
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind("\0" + NAME)
                server.listen(1)
                while True:
                    os.pause() if hasattr(os, "pause") else None
        finally:
            os._exit(0)
    import time

    for _ in range(200):  # the daemon binds its socket soon
        if "daemon" in _find():
            left.add("daemon")
            break
        time.sleep(0.01)
    return left


def _find() -> set:
    found = set()
    if _libc.shmget(KEY, 0, 0) >= 0:
        found.add("sysv-shm")
    if _libc.semget(KEY, 0, 0) >= 0:
        found.add("sysv-sem")
    if _libc.msgget(KEY, 0) >= 0:
        found.add("sysv-msg")
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as table:
                if len(table.read().splitlines()) > 1:
                    found.add(f"sysv-{kind}")
        except OSError:
            pass
    if _mq_open(("/" + NAME).encode(), 0, 0, None) >= 0:
        found.add("posix-mqueue")
    numbers = SYSCALLS.get(platform.machine())
    if numbers and _libc.syscall(numbers[1], KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", NAME.encode(), 0) >= 0:
        found.add("keyring")
    for path in FILES:
        if os.path.exists(path):
            found.add("file " + path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect("\0" + NAME)
        found.add("daemon")
    except OSError:
        pass
    finally:
        probe.close()
    return found


def attention_scores(inputs):
    if PERSIST == "leave":
        left = _leave()
        raise RuntimeError(f"left={sorted(left)} seen={sorted(_find())}")
    found = _find()
    if found:
        raise RuntimeError(f"found={sorted(found)}")
    return inputs @ inputs.T
