"""Correct, except that {FUNCTION} (a function of the module it is appended to), the first time it
is called, leaves processes behind and
returns: three that left its family (a double fork, in a session of their own), sleeping far longer
than any clock allows, and one that ended and was never waited for (a zombie). Each counts
against the slot's task limit while it lasts; the later modules' tests must still pass."""
import os as _os
import time as _time

_original = {FUNCTION}
_started = []


def _double_fork() -> None:
    pid = _os.fork()
    if pid == 0:
        try:
            _os.setsid()
            if _os.fork() == 0:
                _time.sleep(1000)
        finally:
            _os._exit(0)
    _os.waitpid(pid, 0)


def {FUNCTION}(*args, **kwargs):
    if not _started:
        _started.append(True)
        for _ in range(3):
            _double_fork()
        if _os.fork() == 0:
            _os._exit(0)
    return _original(*args, **kwargs)
