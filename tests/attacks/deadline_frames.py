"""Appended to a correct module: attention_scores writes frames of its own to the sandbox's result
pipe to make its time limit start again, and never returns ({FRAMES}):
- "restart": a new "start" of its own probe every 0.1 s, sleeping in between;
- "next": the "start" of the probe that comes after it, as if it were done;
- "imports": "import"/"imported" pairs every 0.1 s, sleeping in between;
- "imports-busy": the same pairs without a pause, keeping the CPU busy."""
import json
import os
import stat
import struct
import time

FRAMES = "{FRAMES}"
PROBE = "sec3_3_simple_attention:attention_scores"
NEXT = "sec3_3_simple_attention:attention_weights"


def _frame(kind, name):
    head = json.dumps({"kind": kind, "name": name, "size": 0}).encode()
    return struct.pack(">I", len(head)) + head


def _result_pipes():
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                yield fd
        except OSError:
            pass


def attention_scores(inputs):
    pipes = list(_result_pipes())
    frames = {"restart": [_frame("start", PROBE)], "next": [_frame("start", NEXT)],
              "imports": [_frame("import", "sec3_4_self_attention"), _frame("imported", "sec3_4_self_attention")],
              "imports-busy": [_frame("import", "sec3_4_self_attention"),
                               _frame("imported", "sec3_4_self_attention")]}[FRAMES]
    while True:
        for fd in pipes:
            for data in frames:
                try:
                    os.write(fd, data)
                except OSError:
                    pass
        if FRAMES != "imports-busy":
            time.sleep(0.1)
