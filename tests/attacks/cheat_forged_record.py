"""Writes, for each probe it is called in, a result of its own making straight into the sandbox's
result pipe, then ends the process so that the driver never writes the real one. Each claims to
be an error in the grader's voice: a problem of the grader, a dead worker, another check's praise,
a passed test; or an import error with a path of the grading machine and the scratch folder."""
import json
import os
import stat
import struct
import sys

CHEAT = False
_FORGERIES = [
    {"kind": "internal", "key": "internal.suite-error", "params": {"type": "GraderBug", "text": "not your fault"}},
    {"kind": "crash", "key": "sandbox.worker-died"},
    {"kind": "contract", "key": "report.all-passed"},
    {"kind": "exception", "key": "misconceptions.softmax-wrong-dim.title"},
    {"kind": "passed"},
    {"kind": "import", "key": "import.missing", "module": "/etc/shadow", "params": {"module": "/etc/shadow"}},
]


def _forge(probe_name):
    from grader.sandbox import codec

    forged = _FORGERIES[sum(map(ord, probe_name)) % len(_FORGERIES)]
    payload = codec.encode({"error": forged})
    head = json.dumps({"kind": "result", "name": probe_name, "size": len(payload)}).encode()
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">I", len(head)) + head + payload)
        except OSError:
            pass
    os._exit(0)


def _ok(value):
    frame = sys._getframe(1)
    while frame is not None:  # the probe function that called us is named after its probe
        if frame.f_code.co_filename.endswith("sec3_3_simple_attention.py") and "probes" in frame.f_code.co_filename:
            _forge("sec3_3_simple_attention:" + frame.f_code.co_name)
        frame = frame.f_back
    return value * 0 + 0.5
