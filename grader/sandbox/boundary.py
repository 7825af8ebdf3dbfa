"""What crosses the sandbox's boundary, checked before anything trusted uses it.

Everything a child sends is hostile data. Outputs are decoded with `codec` (data only) and must be
plain tensors and values; the size of everything a submission sends is charged to a `Budget` as it
arrives. Error records are rebuilt field by field: their kind and catalogue key only from what a
child can legitimately produce (the probes' contract errors, a missing or poisoned import), short
flat parameters, the student's own frames with plain file names, module names of the exercise, and
capped text with the sandbox's scratch folder taken out. Anything else becomes a neutral
"bad record", so that a child can never make a report speak in the grader's voice.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

from grader.i18n import Catalog
from grader.records import MODULES, ProbeError, StudentFrame

MAX_JSON = 256 * 1024  # a probe record's JSON document (the reference's largest: 0.5 kB)
# Bytes of Python objects per byte of JSON, at most: measured 25 for a document of empty tensors,
# 22 for empty lists or dicts, 9 for dict keys, 4 for strings (an honest result: 10 to 20 kB)
JSON_FACTOR = 32
MAX_MESSAGE = 1000
MAX_CODE = 300
MAX_FRAMES = 20
MAX_PARAM = 120
MAX_PARAMS = 8
MAX_LINE = 10_000_000

# A child's record: kinds with no catalogue key, and the keys it may carry with their kinds.
KEYLESS_KINDS = frozenset({"exception", "import", "exit", "resource"})
FAILURE_KINDS = frozenset({"timeout", "crash", "resource", "exit"})  # how an earlier import failed
IMPORT_KEYS = {
    "import.missing": frozenset({"import"}),
    "import.poisoned": FAILURE_KINDS,
    # code used a name it took from a module that does not import (grader.stand_ins)
    "import.stand-in": frozenset({"import", "exit", "resource"}),
    "import.stand-in-located": frozenset({"import", "exit", "resource"}),
    "import.stand-in-missing": frozenset({"import"}),
    "import.stand-in-poisoned": FAILURE_KINDS,
}
PARAM_NAMES = frozenset({"path", "module", "name", "what", "got", "expected"})
# What the worker reports for a probe whose child failed: (ProbeError kind, catalogue key).
STATUSES = {
    "timeout": ("timeout", "sandbox.timeout"),
    "crash": ("crash", "sandbox.crash"),
    "resource": ("resource", "sandbox.resource"),
    "memory": ("resource", "sandbox.memory"),  # the submission's memory group's limit
    "exit": ("exit", "sandbox.exit"),
    "too-large": ("resource", "sandbox.output-too-large"),
    "over-budget": ("resource", "sandbox.over-budget"),
    "module-timeout": ("timeout", "sandbox.module-timeout"),
}

_SCRATCH = re.compile(r"/tmp/submission-[A-Za-z0-9_]+/?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NOT_PARAM = re.compile(r"[^\w .,:()\[\]'-]")
_FILE = re.compile(r"[\w-][\w.-]{0,99}")
_NOT_NAME = re.compile(r"[^\w.]")
_SYNTHETIC = re.compile(r"<\w{1,20}>")  # <module>, <lambda>, <listcomp>, <genexpr>...


class Budget:
    """Bytes that a submission's results may still take in the trusted process."""

    def __init__(self, total: int):
        self.total = self.left = total

    def take(self, count: int) -> bool:
        if count > self.left:
            return False
        self.left -= count
        return True


@cache
def _catalogue() -> Catalog:
    return Catalog("en")


def is_contract_key(key: Any) -> bool:
    """The probes' contract errors: the keys of the catalogue's `contract` messages."""
    return type(key) is str and key.startswith("contract.") and key.count(".") == 1 and _catalogue().has(key)


def decode(payload: bytes | bytearray, budget: Budget | None = None) -> dict[str, Any] | ProbeError:
    """A child's probe record as the trusted side holds it. The payload's bytes are already
    charged to `budget`; the Python objects its JSON document would become are charged here,
    before decoding (at most JSON_FACTOR bytes per byte of JSON)."""
    from grader.sandbox import codec  # torch: not before the workers start (grader.run imports this module)

    if budget is not None and len(payload) >= 4:
        json_bytes = min(int.from_bytes(payload[:4], "big"), MAX_JSON + 1)
        if not budget.take(JSON_FACTOR * json_bytes):
            return status_error("over-budget", "", budget.total)
    try:
        # data only: plain tensors, dicts with string keys, lists, strings, numbers, booleans, None
        record = codec.decode(payload, max_json=MAX_JSON)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an integrity problem
        return ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": _param(str(exc))})
    return result_from_record(record)


def result_from_record(record: Any) -> dict[str, Any] | ProbeError:
    """A probe record ({"ok": outputs} or {"error": description}), checked."""
    if type(record) is dict and len(record) == 1:
        if type(record.get("ok")) is dict:
            return record["ok"]
        if type(record.get("error")) is dict:
            return error_from_dict(record["error"])
    return bad_record()


def bad_record() -> ProbeError:
    return ProbeError(kind="integrity", key="sandbox.bad-record")


def error_from_dict(data: dict) -> ProbeError:
    """An error record rebuilt from what is allowed in each field (see the module's docstring)."""
    kind, key = data.get("kind"), data.get("key", "")
    if type(kind) is not str or type(key) is not str:
        return bad_record()
    if key == "":
        allowed = KEYLESS_KINDS
    elif key in IMPORT_KEYS:
        allowed = IMPORT_KEYS[key]
    elif is_contract_key(key):
        allowed = frozenset({"contract"})
    else:
        return bad_record()
    if kind not in allowed:
        return bad_record()
    params = _params(data.get("params"))
    if key in IMPORT_KEYS and params.get("module") not in MODULES:
        return bad_record()
    module = data.get("module")
    return ProbeError(
        kind=kind,
        exc_type=_exc_type(data.get("exc_type")),
        message=text(data.get("message"), MAX_MESSAGE),
        module=module if type(module) is str and module in MODULES else "",
        frames=_frames(data.get("frames")),
        key=key,
        params=params,
    )


def status_error(status: str, module: Any, limit: int = 0, seconds: float = 0) -> ProbeError:
    """What the worker said about a probe whose child failed (`status` from STATUSES); `limit` is
    the size limit that was exceeded, if any, `seconds` the time limit."""
    kind, key = STATUSES[status]
    module = module if module in MODULES else ""
    if status == "timeout" and module:
        key = "sandbox.import-timeout"  # stopped while importing `module`
    params: dict[str, Any] = {"module": module}
    if limit:
        params["limit_mb"] = _megabytes(limit)  # a number: the report shows it as the grader's
    if seconds:
        params["seconds"] = int(seconds) if float(seconds).is_integer() else round(seconds, 1)
    return ProbeError(kind=kind, module=module, key=key, params=params)


def _megabytes(count: int) -> int | float:
    megabytes = count / 1024**2
    return int(megabytes) if megabytes.is_integer() else round(megabytes, 2)


def text(value: Any, limit: int) -> str:
    """Student text as the report may show it: a string, capped, without control characters
    (newlines and tabs kept), without the sandbox's scratch folder and without the folders of this
    machine's Python and kit (an ImportError names the installed package's file: "…/torch/nn/__init__.py")."""
    if type(value) is not str:
        return ""
    return _CONTROL.sub("", _host_paths().sub("…/", _SCRATCH.sub("", value[: limit * 2])))[:limit]


@lru_cache(maxsize=1)
def _host_paths() -> re.Pattern:
    """The grading machine's folders a message may name: the interpreter's prefixes, its
    site-packages, the kit's checkout and the user's home (longest first)."""
    import os
    import site
    import sys
    import sysconfig

    folders = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.expanduser("~"),
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        *sysconfig.get_paths().values(),
        *getattr(site, "getsitepackages", lambda: [])(),
    }
    folders |= {os.path.realpath(folder) for folder in folders}
    longest_first = sorted((f.rstrip("/") for f in folders if f and len(f.rstrip("/")) > 1), key=len, reverse=True)
    return re.compile("|".join(re.escape(folder) + r"/+" for folder in longest_first))


def _param(value: Any) -> Any:
    if type(value) in (bool, int, float):
        return value
    return _NOT_PARAM.sub("?", text(value, MAX_PARAM).replace("\n", " ").replace("\t", " "))


def _params(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        return {}
    return {
        name: _param(item)
        for name, item in list(value.items())[: MAX_PARAMS * 4]
        if name in PARAM_NAMES and type(item) in (bool, int, float, str)
    }


def _exc_type(value: Any) -> str:
    name = re.sub(r"[^\w.]", "", text(value, 100))
    return name or ("Exception" if value else "")


def _frames(value: Any) -> tuple[StudentFrame, ...]:
    if type(value) is not list:
        return ()
    frames = []
    for item in value[-MAX_FRAMES * 4 :]:
        if type(item) is not dict or type(item.get("file")) is not str or not _FILE.fullmatch(item["file"]):
            continue
        line = item.get("line")
        line = line if type(line) is int and 0 <= line <= MAX_LINE else 0
        code = text(item.get("code"), MAX_CODE).replace("\n", " ").replace("\t", " ")
        function = text(item.get("function"), 100)
        function = function if _SYNTHETIC.fullmatch(function) else _NOT_NAME.sub("", function)
        frames.append(StudentFrame(item["file"], line, function, code))
    return tuple(frames[-MAX_FRAMES:])
