"""Appended to a correct module: attention_scores either leaves a process behind for whoever runs
next in the same worker (PERSIST = "leave"), or looks for one (PERSIST = "find"). The process
that is left has left the child's family and session (a double fork, setsid), then ended its
main thread alone: its leader is a zombie ("Z" in /proc/<pid>/stat) while another thread of it
runs on, free to fork, signal the next student's child or write where it writes. "leave" raises;
"find" returns the correct scores only when no such thread is to be seen."""
import ctypes
import os
import threading
import time

PERSIST = "{PERSIST}"
NAME = b"akit-leaderless"
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15
SYS_EXIT = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine, 60)


def _leave() -> None:
    if os.fork() == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                def live() -> None:
                    _libc.prctl(PR_SET_NAME, NAME, 0, 0, 0)
                    while True:
                        time.sleep(0.05)
                threading.Thread(target=live, daemon=True).start()
                time.sleep(0.2)
                _libc.syscall(SYS_EXIT, 0)  # the main thread alone ends: the leader becomes a zombie
        finally:
            os._exit(0)
    time.sleep(0.5)


def _seen() -> bool:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for task in os.listdir(f"/proc/{entry}/task"):
                with open(f"/proc/{entry}/task/{task}/comm", "rb") as comm:
                    if comm.read().strip() == NAME:
                        return True
        except OSError:
            pass
    return False


_scores = attention_scores


def attention_scores(*args, **kwargs):
    if PERSIST == "leave":
        _leave()
        raise RuntimeError("left a leaderless process")
    if _seen():
        raise RuntimeError("found a process of an earlier student")
    return _scores(*args, **kwargs)
