"""Appended to a correct module: context_vectors writes a result frame of its own for its probe
to the sandbox's result pipe (as if it had returned), then sleeps far longer than any clock
allows: the time it sleeps after its forged result must still count against its module."""
import os as _os
import stat as _stat
import time as _time

from grader.sandbox import codec as _codec
from grader.sandbox.channel import frame as _frame

_PROBE = "sec3_3_simple_attention:context_vectors"


def context_vectors(inputs):
    forged = _frame({"kind": "result", "name": _PROBE}, _codec.encode({"ok": {"forged": 1}}))
    for entry in _os.listdir("/proc/self/fd"):
        fd = int(entry)
        try:
            if fd > 2 and _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                _os.write(fd, forged)
        except OSError:
            pass
    _time.sleep(1000)
