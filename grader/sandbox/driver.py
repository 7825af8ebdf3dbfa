"""Run probes against a namespace and describe what happened in plain, serialisable data.

Runs inside the sandbox (against student code) and in the trusted grader (against the reference
and the buggy variants). Imports only the standard library, torch and `grader.probes`.
"""

from __future__ import annotations

import errno
import importlib
import importlib.abc
import linecache
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import torch

from grader import stand_ins
from grader.probes import PROBE_MODULES, ContractError, Namespace, Probe, cpu_manual_seed, own_code
from grader.probes.tracer import traced
from grader.sandbox import codec

MAX_TEXT = 2000


class ModuleMissing(Exception):
    def __init__(self, module: str):
        super().__init__(module)
        self.module = module


class ImportFailed(Exception):
    """A student module raised while being imported; carries the original exception."""

    def __init__(self, module: str, cause: BaseException):
        super().__init__(module)
        self.module = module
        self.cause = cause


class ModulePoisoned(Exception):
    """Importing this module timed out or crashed the process before; it is not tried again."""

    def __init__(self, module: str, kind: str):
        super().__init__(module)
        self.module = module
        self.kind = kind


class _PoisonFinder(importlib.abc.MetaPathFinder):
    def __init__(self, poisoned: dict[str, str]):
        self.poisoned = poisoned

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.poisoned:
            raise ModulePoisoned(fullname, self.poisoned[fullname])
        return None


class StudentNamespace:
    """The student's modules, imported from one directory that is first on sys.path. A student
    module that imports another of the exercise's modules that does not import gets a stand-in
    for it (`stand_ins`): it imports, and only what uses the stand-in fails."""

    def __init__(
        self,
        directory: str,
        poisoned: dict[str, str] | None = None,
        on_import: Callable[[str], None] | None = None,
        on_imported: Callable[[str], None] | None = None,
    ):
        self.directory = os.path.realpath(directory)
        self.poisoned = dict(poisoned or {})
        self.on_import = on_import or (lambda module: None)
        self.on_imported = on_imported or (lambda module: None)
        self._failures: dict[str, BaseException] = {}
        self._direct: set[str] = set()  # the modules this namespace is importing itself
        if self.directory not in sys.path:
            sys.path.insert(0, self.directory)
        sys.meta_path.insert(0, _PoisonFinder(self.poisoned))
        finder = stand_ins.StandInFinder(
            self.directory, frozenset(PROBE_MODULES), self._direct, self._known_failure, self._failed
        )
        # one namespace's stand-ins at a time: an earlier namespace's (an earlier command's, in the
        # same child) would answer the imports this one makes itself with its own old failures
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, stand_ins.StandInFinder)]
        sys.meta_path.insert(0, finder)

    def module(self, name: str) -> Any:
        if name in self._failures:
            raise self._failures[name]
        if name in sys.modules and getattr(sys.modules[name], "__file__", None):
            return sys.modules[name]
        failure = self._known_failure(name)
        if failure is None:
            self.on_import(name)
            self._direct.add(name)
            try:
                return importlib.import_module(name)
            except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
                failure = exc if isinstance(exc, ModulePoisoned) else ImportFailed(name, exc)
            finally:
                torch_defaults()  # the probe that imports a module runs as every other one
                self._direct.discard(name)
                self.on_imported(name)  # a later hang is no longer this import's fault
        self._failures[name] = failure
        raise failure

    def _known_failure(self, name: str) -> BaseException | None:
        """Why `name` cannot be imported, known without trying: an earlier failure, poisoned, missing."""
        if name in self._failures:
            return self._failures[name]
        if name in self.poisoned:
            return ModulePoisoned(name, self.poisoned[name])
        if not os.path.exists(os.path.join(self.directory, name + ".py")):
            return ModuleMissing(name)
        return None

    def _failed(self, name: str, exc: BaseException) -> BaseException:
        """Importing `name` (for another student module) raised `exc`: remembered, and returned."""
        failure = exc if isinstance(exc, ModulePoisoned) else ImportFailed(name, exc)
        self._failures[name] = failure
        return failure


def plain(value: Any, depth: int = 0) -> Any:
    """Outputs as plain data: torch.Tensor (not a subclass), numbers, strings, lists, dicts."""
    if depth > 8:
        raise ContractError("contract.output-too-deep")
    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        return copy if type(copy) is torch.Tensor else copy.as_subclass(torch.Tensor)
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item, depth + 1) for key, item in value.items()}
    raise ContractError("contract.unsupported-output", got=type(value).__name__)


def _text(value: Any) -> str:
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "<unprintable>"
    return text[:MAX_TEXT]


def without_scratch(text: str, directory: str) -> str:
    """`text` with the sandbox's scratch folder taken out of paths: messages name the student's
    file ("sec3_5_causal_attention.py"), never "/tmp/submission-…/sec3_5_causal_attention.py"."""
    if not directory:
        return text
    for folder in {directory, os.path.realpath(directory)}:
        text = text.replace(folder + os.sep, "").replace(folder, ".")
    return text


def _student_frames(exc: BaseException, directory: str) -> list[dict]:
    """The traceback's frames in the student's files. A frame of code compiled at run time under a
    student file's name (`exec(compile(text, __file__, "exec"))`) is left out: its line is a line
    of that text, not of the file (see grader.probes.own_code); the line that ran it stays."""
    frames = []
    for frame, line in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        filename = os.path.realpath(code.co_filename)
        if filename.startswith(directory + os.sep) and own_code.from_its_file(code):
            text = linecache.getline(code.co_filename, line or 0).strip()
            frames.append(
                {
                    "file": os.path.relpath(filename, directory),
                    "line": line or 0,
                    "function": code.co_name,
                    "code": without_scratch(text[:300], directory),
                }
            )
    if isinstance(exc, SyntaxError) and exc.filename:
        filename = os.path.realpath(exc.filename)
        if filename.startswith(directory + os.sep) and own_code.syntax_error_in_file(exc.filename, exc.lineno):
            frames.append(
                {
                    "file": os.path.relpath(filename, directory),
                    "line": exc.lineno or 0,
                    "function": "<module>",
                    "code": without_scratch((exc.text or "").rstrip()[:300], directory),
                }
            )
    return frames


def _is_out_of_memory(exc: BaseException) -> bool:
    """Memory or file-size limits hit (Python ignores SIGXFSZ, so a too-large file is an OSError)."""
    text = (
        _text(exc).lower() if isinstance(exc, RuntimeError) else ""
    )  # torch's and MindSpore's ("Allocate memory failed")
    return (
        isinstance(exc, MemoryError)
        or (isinstance(exc, OSError) and exc.errno == errno.EFBIG)
        or ("allocate" in text and "memory" in text)
    )


def describe_error(exc: BaseException, directory: str) -> dict:
    """A serialisable description of why a probe failed, naming only the student's own frames."""
    kind = "exception"
    cause = exc
    module = ""
    directory = os.path.realpath(directory) if directory else ""
    if isinstance(exc, ModuleMissing):
        return {"kind": "import", "key": "import.missing", "module": exc.module, "params": {"module": exc.module}}
    if isinstance(exc, ModulePoisoned):
        return {"kind": exc.kind, "key": "import.poisoned", "module": exc.module, "params": {"module": exc.module}}
    if isinstance(exc, ContractError):
        return {"kind": "contract", "key": exc.key, "params": {k: plain_param(v) for k, v in exc.params.items()}}
    if isinstance(exc, ImportFailed):
        kind, cause, module = "import", exc.cause, exc.module
    if isinstance(cause, stand_ins.EarlierModuleBroken):
        return _stand_in_used(cause, directory)
    if isinstance(cause, SystemExit):
        kind = "exit"
    elif _is_out_of_memory(cause):
        kind = "resource"
    frames = _student_frames(cause, directory) if directory else []
    if frames:
        module = os.path.splitext(frames[-1]["file"])[0]
    return {
        "kind": kind,
        "exc_type": _text(type(cause).__name__),
        "message": without_scratch(_text(cause), directory),
        "module": module,
        "frames": frames,
    }


def _stand_in_used(exc: stand_ins.EarlierModuleBroken, directory: str) -> dict:
    """The code under test used `exc.name`, taken from a module that does not import: the record of
    that module's own failure (its line), under a key that says which name needed it."""
    failure = exc.failure
    params = {"module": exc.module, "name": _text(exc.name)[:100]}
    if isinstance(failure, ModuleMissing):
        return {"kind": "import", "key": "import.stand-in-missing", "module": exc.module, "params": params}
    if isinstance(failure, ModulePoisoned):
        return {"kind": failure.kind, "key": "import.stand-in-poisoned", "module": exc.module, "params": params}
    record = describe_error(failure, directory)
    if str(record.get("key", "")).startswith("import.stand-in"):
        return record  # that module failed because it used a stand-in itself: the first broken one
    located = "-located" if record.get("frames") else ""
    return record | {"key": f"import.stand-in{located}", "module": exc.module, "params": params}


def plain_param(value: Any) -> Any:
    return value if type(value) in (bool, int, float, str) else _text(value)


def torch_defaults() -> None:
    """float32 as the default dtype and gradients on, whatever a student module set (at import, a
    `torch.set_default_dtype(torch.float64)` would change the probe's layers and inputs)."""
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)


def reset_global_state() -> None:
    """Undo global changes a previous probe (or a student module) may have made."""
    torch_defaults()
    cpu_manual_seed(0)


def run_probe(probe: Probe, ns: Namespace, directory: str) -> dict:
    """Run one probe; returns {"ok": outputs} or {"error": description}."""
    reset_global_state()
    try:
        return {"ok": plain(probe.fn(ns))}
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything, even SystemExit
        return {"error": describe_error(exc, directory)}


# A trace's JSON document at most (the reference's largest: 29 kB); its tensors are capped by the
# tracer. A submission's traces share the job's result budget with nothing else.
TRACE_JSON = 64 * 1024


def trace_probe(probe: Probe, ns: Namespace, directory: str) -> dict | Encoded:
    """Mode "trace": the probe run again under the tracer (grader.probes.tracer); its record is
    {"ok": {"trace": document}} whether the probe passed or raised (the grade run has its outputs).
    A document too large to send keeps its first ops only, marked truncated. Returned encoded: it
    was encoded to measure it (unless even the empty document failed to encode: then `serialise`
    tries once more, and says what failed)."""
    document, payload = _fit(traced(run_probe, probe, ns, directory)["trace"], TRACE_JSON)
    return {"ok": {"trace": document}} if payload is None else payload


class Encoded(bytes):
    """A probe's record already in the wire format (`serialise` sends it as it is)."""


def fitted(document: dict, max_json: int) -> dict:
    """`document` cut to its first ops (the nodes made until then, the calls they belong to) until
    its JSON fits; a reference past the cut is dropped, so that the trusted side can parse the rest."""
    return _fit(document, max_json)[0]


def _fit(document: dict, max_json: int) -> tuple[dict, Encoded | None]:
    """`fitted`'s document and its record {"ok": {"trace": document}} encoded."""
    keep = len(document["ops"])
    payload = _encoded(document)
    while keep and _json_size(payload) > max_json:
        keep //= 2
        ops = document["ops"][:keep]
        last = next((i for i, n in enumerate(document["nodes"]) if n["op"] >= keep), len(document["nodes"]))
        nodes = [
            n if n.get("origin", -1) < last else {k: v for k, v in n.items() if k != "origin"}
            for n in document["nodes"][:last]
        ]
        calls = [
            _call_within(call, last) for call in document["calls"][: max((op["call"] for op in ops), default=-1) + 1]
        ]
        document = {"ops": ops, "nodes": nodes, "calls": calls, "truncated": True}
        payload = _encoded(document)
    if _json_size(payload) > max_json:
        document = {"ops": [], "nodes": [], "calls": [], "truncated": True}
        payload = _encoded(document)
    return document, payload


def _call_within(call: dict, nodes: int) -> dict:
    args = {k: v for k, v in call["args"].items() if not (type(v) is dict and v["node"] >= nodes)}
    return dict(call, args=args, result=[n for n in call.get("result", []) if n < nodes])


def packed(document: dict) -> dict:
    """The tracer's document as it is sent: the nodes' recorded values joined into one flat tensor per
    dtype under "values", each node's "value" its offset there (one tensor to encode, send and decode
    per dtype instead of one per node; grader.diagnosis.trace.documents reads both forms)."""
    parts: dict[str, list] = {}
    sizes: dict[str, int] = {}
    nodes = []
    for node in document["nodes"]:
        value = node.get("value")
        if value is None:
            nodes.append(node)
            continue
        dtype = node["dtype"]
        nodes.append(dict(node, value=sizes.get(dtype, 0)))
        parts.setdefault(dtype, []).append(value.reshape(-1))
        sizes[dtype] = sizes.get(dtype, 0) + value.numel()
    if not parts:
        return document  # nothing recorded: the plain form is the shorter
    return dict(document, nodes=nodes, values={dtype: torch.cat(chunks) for dtype, chunks in parts.items()})


def _encoded(document: dict) -> Encoded | None:
    """The record {"ok": {"trace": document}} as it is sent (packed), or None when it cannot be."""
    try:  # the tracer's own document: exact JSON types and tensors
        return Encoded(codec.encode_plain({"ok": {"trace": packed(document)}}))
    except (codec.CodecError, MemoryError, RuntimeError):
        return None


def _json_size(payload: Encoded | None) -> int:
    return 1 << 62 if payload is None else int.from_bytes(payload[:4], "big")


# What the sandbox's child does with each probe, by mode (`SandboxPool.submit(..., mode=...)`): a
# function of (probe, namespace, the submission's folder) returning {"ok": outputs} or {"error": ...}.
MODES: dict[str, Callable[[Probe, Namespace, str], dict | Encoded]] = {"grade": run_probe, "trace": trace_probe}


def serialise(result: dict | Encoded) -> bytes:
    """A probe's record in the sandbox's wire format (data only: see `codec`)."""
    if type(result) is Encoded:
        return result
    try:
        return codec.encode(result)
    except MemoryError:
        return codec.encode(
            {"error": {"kind": "resource", "exc_type": "MemoryError", "message": "the result is too large to send"}}
        )
    except codec.CodecError as exc:
        return codec.encode(
            {"error": {"kind": "contract", "key": "contract.unsupported-output", "params": {"got": _text(exc)}}}
        )


def run_probes(probes: Iterable[Probe], ns: Namespace, directory: str) -> dict[str, dict]:
    """In-process execution of probes (the reference and the variants: grader.reference_code)."""
    return {probe.name: run_probe(probe, ns, directory) for probe in probes}
