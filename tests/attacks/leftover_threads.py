"""Correct, except that {FUNCTION} (a function of the module it is appended to), the first time it
is called, starts three threads that
sleep far longer than any clock allows and returns without waiting for them. Each counts against
the child's task limit for as long as the child lives; the later modules' tests must still pass."""
import threading as _threading
import time as _time

_original = {FUNCTION}
_started = []


def {FUNCTION}(*args, **kwargs):
    if not _started:
        _started.append(True)
        for _ in range(3):
            _threading.Thread(target=_time.sleep, args=(1000,), daemon=True).start()
    return _original(*args, **kwargs)
