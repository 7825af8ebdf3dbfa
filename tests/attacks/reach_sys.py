"""Appended to a correct module: attention_scores looks at what of /sys the sandbox shows (only the
kernel's transparent huge page settings, read-only, for glibc's malloc), tries to change one of
them, and checks that a large tensor's memory was asked for in huge pages where the kernel offers
them. It raises with what it found, as JSON: the test reads it."""

import json as _json
import os as _os


def _seen() -> dict:
    shown = []
    for folder, names, files in _os.walk("/sys"):
        shown += [_os.path.join(folder, name) for name in names + files]
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", "w") as handle:
            handle.write("never")
        written = True
    except OSError:
        written = False
    import torch as _torch

    held = _torch.ones(1024, 1024)  # 4 MB: glibc maps it apart, and asks for huge pages
    with open("/proc/self/smaps") as smaps:
        huge = sum(1 for line in smaps if line.startswith("VmFlags:") and " hg" in line)
    del held
    with open("/proc/self/mountinfo") as mounts:  # the bind's own options: read-only or not
        options = [line.split()[5] for line in mounts if line.split()[4] == "/sys/kernel/mm/transparent_hugepage"]
    return {"shown": sorted(shown), "written": written, "huge_page_areas": huge, "mount_options": options}


def attention_scores(inputs):
    raise RuntimeError(_json.dumps(_seen()))
