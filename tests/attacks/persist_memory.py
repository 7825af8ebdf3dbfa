"""Appended to a correct module. The sandbox's children are forked from a warm worker, so they
start with a copy of its memory: whatever the worker held for an earlier student (that student's
files as the job arrived, the results it forwarded) would be there, in freed heap, for the next.

PERSIST = "victim": SECRET is a long comment (the test fills it in: the tag, "k3J9xQ", then
padding), so that the job carrying it is larger than the thief's and what the thief's job
reuses does not cover it. PERSIST = "thief": attention_scores
scans every writable mapping of its own memory for the victim's secret (as written, and as the
base64 of a job line) and raises with what it found; the correct scores only when nothing."""
import base64 as _base64
import ctypes as _ctypes

PERSIST = "{PERSIST}"
_TAG = "VICTIM" + "-SECRET-"  # never written whole in the thief's own source
# {SECRET}


def _found_in_memory() -> list:
    tag = _TAG.encode()
    # the tag inside a base64-encoded file, at its three alignments (whole 4-character groups)
    encoded = [_base64.b64encode(b"x" * pad + tag) for pad in range(3)]
    needles = [tag] + [text[4 if pad else 0:-4] for pad, text in enumerate(encoded)]
    found = set()
    with open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for line in lines:
        fields = line.split()
        if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5].startswith("/")):
            continue
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        if high - low > 1 << 30:
            continue
        try:
            data = _ctypes.string_at(low, high - low)
        except Exception:
            continue
        for number, needle in enumerate(needles):
            start = 0
            while (index := data.find(needle, start)) >= 0:
                window = data[index:index + 64]
                if number:
                    try:
                        window = _base64.b64decode(window, validate=False)
                    except Exception:
                        window = b""
                if b"k3J9xQ" in window:  # the victim's, not this module's own needles
                    found.add(window[:40])
                start = index + 1
    return sorted(found)


if PERSIST == "thief":
    _plain_attention_scores = attention_scores

    def attention_scores(inputs):
        found = _found_in_memory()
        if found:
            raise RuntimeError(f"found the victim's secret: {found[:2]}")
        return _plain_attention_scores(inputs)
