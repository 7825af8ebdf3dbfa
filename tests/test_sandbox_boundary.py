"""What crosses the sandbox's boundary: framing, byte budgets and the checks on every record a
child sends (grader/sandbox/channel.py, boundary.py). Fast: no sandbox is started here."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.i18n import Catalog
from grader.records import MODULES, ProbeError
from grader.report.messages import error_message
from grader.sandbox import boundary, codec, driver
from grader.sandbox.boundary import Budget, decode, error_from_dict, result_from_record
from grader.sandbox.channel import ChannelError, FrameReader, frame, until

ROOT = Path(__file__).resolve().parents[1]
BAD = "sandbox.bad-record"


def record(error: dict) -> bytes:
    return codec.encode({"error": error})


# -- error records --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "internal.suite-error",  # "This is a problem of the grader, not of your code."
        "sandbox.worker-died",
        "sandbox.timeout",
        "integrity.bad-result",
        "error.internal.located",
        "report.all-passed",
        "misconceptions.softmax-wrong-dim.title",
        "tests.sec3_5_causal_attention::test_x.title",
        "contract",
        "contract.",
        "contract.missing-function.extra",
        "import.other",
        7,
        None,
        ["contract.not-a-tensor"],
    ],
)
def test_a_forged_catalogue_key_becomes_a_neutral_bad_record(key):
    error = error_from_dict({"kind": "contract", "key": key, "params": {"module": MODULES[0]}})
    assert (error.kind, error.key, error.params) == ("integrity", BAD, {})


@pytest.mark.parametrize(
    "kind, key, module",
    [
        ("exception", "contract.missing-function", MODULES[0]),  # a contract key needs kind contract
        ("timeout", "import.missing", MODULES[0]),
        ("import", "import.missing", "../../etc/passwd"),  # import keys name a module of the exercise
        ("timeout", "import.poisoned", "os"),
        ("internal", "", ""),
        ("integrity", "", ""),
        ("passed", "", ""),
        ("timeout", "", ""),
        ("crash", "", ""),
    ],
)
def test_kind_and_key_must_go_together(kind, key, module):
    assert error_from_dict({"kind": kind, "key": key, "params": {"module": module}}).key == BAD


@pytest.fixture
def fresh_modules():
    """Student modules imported by a test are forgotten before and after it."""
    import sys

    for name in MODULES:
        sys.modules.pop(name, None)
    yield
    for name in MODULES:
        sys.modules.pop(name, None)


def test_every_error_the_driver_writes_passes_unchanged(tmp_path, fresh_modules):
    """The allowlist is not narrower than what the probes and the driver legitimately produce."""
    directory = str(tmp_path)
    (tmp_path / "sec3_3_simple_attention.py").write_text("def f():\n    raise ValueError('bad value')\n")
    (tmp_path / "sec3_4_self_attention.py").write_text("def broken(:\n")
    ns = driver.StudentNamespace(directory)
    try:
        errors = []
        try:
            ns.module("sec3_3_simple_attention").f()
        except ValueError as exc:
            errors.append(driver.describe_error(exc, directory))
        for name in ("sec3_4_self_attention", "exercise3_1_weight_transfer"):
            try:
                ns.module(name)
            except Exception as exc:  # noqa: BLE001
                errors.append(driver.describe_error(exc, directory))
        errors.append(driver.describe_error(driver.ModulePoisoned("sec3_5_causal_attention", "timeout"), directory))
        errors.append(
            driver.describe_error(
                driver.ContractError("contract.wrong-shape", what="heads", expected=[3, 5], got=[2]), directory
            )
        )
    finally:
        sys_path_remove(ns.directory)
    for description in errors:
        rebuilt = error_from_dict(json.loads(json.dumps(description)))
        assert rebuilt.key != BAD, description
        assert rebuilt.kind == description["kind"]
        assert rebuilt.key == description.get("key", "")
        assert rebuilt.message == description.get("message", "")
        assert [f.file for f in rebuilt.frames] == [f["file"] for f in description.get("frames", [])]
    assert errors[0]["frames"][-1]["file"] == "sec3_3_simple_attention.py"


def sys_path_remove(directory: str) -> None:
    import sys

    if directory in sys.path:
        sys.path.remove(directory)


def test_every_contract_key_the_probes_raise_is_allowed_and_speaks_both_languages():
    keys = set()
    for file in [*(ROOT / "grader" / "probes").glob("*.py"), ROOT / "grader" / "sandbox" / "driver.py"]:
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("contract."):
                keys.add(node.value)
    assert len(keys) >= 6
    for key in keys:
        assert boundary.is_contract_key(key), key
        assert Catalog("en").has(key) and Catalog("zh").has(key), key


def test_fields_are_rebuilt_short_flat_and_plain():
    long = "x" * 100_000
    error = error_from_dict(
        {
            "kind": "exception",
            "exc_type": "Evil`Type <img src=x onerror=alert(1)>\n",
            "module": "os",
            "message": "boom\x00\x1b[31m red\u202e at /tmp/submission-ab_12/sec3_3_simple_attention.py line 3\n" + long,
            "params": {
                "what": "a`b\n**c** <b>",
                "got": ["list"],
                "expected": {"a": 1},
                "path": long,
                "evil": "x",
                "name": 3,
                "module": True,
            },
            "frames": [
                {"file": "/etc/passwd", "line": 1, "function": "f", "code": "x"},
                {"file": "../up.py", "line": 2, "function": "f", "code": "x"},
                {"file": "sub/dir.py", "line": 2, "function": "f", "code": "x"},
                {"file": 5, "line": 2},
                *[
                    {"file": "sec3_3_simple_attention.py", "line": i, "function": "f<b>\n", "code": "a\nb" + long}
                    for i in range(100)
                ],
                {"file": "helper.py", "line": -5, "function": "g", "code": "c"},
            ],
        }
    )
    assert error.kind == "exception" and error.key == ""
    assert error.exc_type == "EvilTypeimgsrcxonerroralert1"
    assert error.module == ""  # not a module of the exercise
    assert "/tmp/submission-" not in error.message and "sec3_3_simple_attention.py line 3" in error.message
    assert "\x00" not in error.message and "\x1b" not in error.message and "\u202e" not in error.message
    assert len(error.message) <= boundary.MAX_MESSAGE
    assert set(error.params) == {"what", "path", "name", "module"}
    assert error.params["what"] == "a?b ??c?? ?b?" and len(error.params["path"]) == boundary.MAX_PARAM
    assert (error.params["name"], error.params["module"]) == (3, True)
    assert len(error.frames) == boundary.MAX_FRAMES
    assert {f.file for f in error.frames} == {"sec3_3_simple_attention.py", "helper.py"}
    assert error.frames[-1].line == 0  # a negative line number is no line number
    assert all(
        "\n" not in f.code and len(f.code) <= boundary.MAX_CODE and f.function == "fb" for f in error.frames[:-1]
    )


def test_the_scratch_folder_never_reaches_a_message(tmp_path, fresh_modules):
    scratch = tmp_path / "submission-x1"
    scratch.mkdir()
    (scratch / "sec3_3_simple_attention.py").write_text(
        "import os\n\ndef f():\n"
        "    raise FileNotFoundError(os.path.join(os.path.dirname(__file__), 'data.txt') + ' and ' + __file__)\n"
    )
    ns = driver.StudentNamespace(str(scratch))
    try:
        ns.module("sec3_3_simple_attention").f()
    except FileNotFoundError as exc:
        description = driver.describe_error(exc, str(scratch))
    finally:
        sys_path_remove(ns.directory)
    assert description["message"] == "data.txt and sec3_3_simple_attention.py"
    assert description["frames"][-1]["file"] == "sec3_3_simple_attention.py"


# -- property: any record a child may send ------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(
    [
        "",
        "import.missing",
        "import.poisoned",
        "contract.not-a-tensor",
        "contract.wrong-shape",
        "internal.suite-error",
        "sandbox.crash",
        "report.all-passed",
    ]
) | st.text(max_size=30)
kinds = st.sampled_from(
    ["exception", "import", "exit", "resource", "contract", "timeout", "crash", "integrity", "internal"]
) | st.text(max_size=10)
frames = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "file": st.sampled_from(["sec3_3_simple_attention.py", "/etc/passwd", "../x.py", "a/b.py"])
            | st.text(max_size=20),
            "line": st.integers() | json_values,
            "function": st.text(max_size=20) | json_values,
            "code": st.text(max_size=400) | json_values,
        },
    ),
    max_size=30,
)
error_records = st.fixed_dictionaries(
    {},
    optional={
        "kind": kinds | json_values,
        "key": keys | json_values,
        "exc_type": st.text(max_size=200) | json_values,
        "message": st.text(max_size=3000) | json_values,
        "module": st.sampled_from(MODULES) | st.text(max_size=20),
        "params": st.dictionaries(
            st.text(max_size=12) | st.sampled_from(sorted(boundary.PARAM_NAMES)), json_values, max_size=12
        )
        | json_values,
        "frames": frames | json_values,
        "extra": json_values,
    },
)
ALLOWED = {"": boundary.KEYLESS_KINDS, **boundary.IMPORT_KEYS}


@settings(max_examples=200, deadline=None)
@given(error_records)
def test_any_error_record_is_rebuilt_within_bounds(data):
    error = error_from_dict(data)
    assert isinstance(error, ProbeError)
    if error.key == BAD:
        assert error.kind == "integrity"
    elif error.key.startswith("contract."):
        assert boundary.is_contract_key(error.key) and error.kind == "contract"
    else:
        assert error.kind in ALLOWED[error.key]
    if error.key in boundary.IMPORT_KEYS:
        assert error.params["module"] in MODULES
    assert error.module in (*MODULES, "")
    assert set(error.params) <= boundary.PARAM_NAMES
    for value in error.params.values():
        assert type(value) in (bool, int, float) or (
            type(value) is str and len(value) <= boundary.MAX_PARAM and re.fullmatch(r"[\w .,:()\[\]'?-]*", value)
        )
    assert re.fullmatch(r"[\w.]{0,100}", error.exc_type)
    assert len(error.message) <= boundary.MAX_MESSAGE and "/tmp/submission-" not in error.message
    assert len(error.frames) <= boundary.MAX_FRAMES
    for frame_ in error.frames:
        assert "/" not in frame_.file and not frame_.file.startswith(".") and frame_.line >= 0
        assert "\n" not in frame_.code and len(frame_.code) <= boundary.MAX_CODE
    for lang in ("en", "zh"):  # the report can always say it, in the student's words or ours
        text = error_message(error, Catalog(lang))
        assert isinstance(text, str) and text


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_record_shape_is_outputs_an_error_or_a_bad_record(value):
    result = result_from_record(value)
    assert isinstance(result, (dict, ProbeError))
    if isinstance(result, dict):
        assert value == {"ok": result}


# -- payloads and the byte budget ----------------------------------------------------------------


def test_results_are_plain_data_and_pickles_are_refused():
    import io

    assert torch.equal(decode(codec.encode({"ok": {"x": torch.ones(2, 3)}}))["x"], torch.ones(2, 3))
    buffer = io.BytesIO()
    torch.save({"ok": {"x": torch.ones(2)}}, buffer)
    assert decode(buffer.getvalue()).key == "integrity.bad-result"
    big_json = json.dumps({"ok": {"x": [0] * 200_000}}).encode()
    assert decode(struct.pack(">I", len(big_json)) + big_json).key == "integrity.bad-result"  # over MAX_JSON
    assert decode(codec.encode({"ok": {"x": 1}, "error": {}})).key == BAD
    assert decode(record({"kind": "exception", "key": "internal.suite-error"})).key == BAD


def test_the_budget_pays_for_decoded_objects_not_only_bytes():
    lists = codec.encode({"ok": {"x": [[] for _ in range(20_000)]}})  # 80 kB of JSON, 1.2 MB of lists
    budget = Budget(1024**2)
    assert decode(lists, budget).key == "sandbox.over-budget"
    budget = Budget(4 * 1024**2)
    assert isinstance(decode(lists, budget), dict)
    assert budget.left < 4 * 1024**2 - 20_000 * 56
    astral = codec.encode({"ok": {"x": "\U0001f600" + "a" * 100_000}})  # 100 kB of JSON, 400 kB of str
    budget = Budget(4 * 10**6)
    assert isinstance(decode(astral, budget), dict)
    assert budget.left <= 4 * 10**6 - 400_000


tensor_specs = st.lists(st.one_of(st.sampled_from(sorted(codec.DTYPES)), st.text(max_size=8)), max_size=1).map(
    lambda names: names[0] if names else "float32"
)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        json_values
        | st.builds(
            lambda d, shape, o, n: {"$t": [d, shape, o, n]},
            tensor_specs,
            st.lists(st.integers(-2, 5), max_size=3),
            st.integers(-4, 64),
            st.integers(-4, 64),
        )
        | st.builds(lambda f: {"$f": f}, st.sampled_from(["nan", "inf", "-inf", "1.0", ""])),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
        max_leaves=10,
    ),
    st.binary(max_size=64),
)
def test_the_codec_decodes_any_document_to_plain_data_or_refuses_it(document, tail):
    """What `boundary.decode` relies on: whatever a child writes, decoding gives plain tensors,
    dicts with string keys, lists, strings, numbers, booleans and None, or a CodecError."""
    text = json.dumps(document).encode()
    try:
        value = codec.decode(struct.pack(">I", len(text)) + text + tail)
    except codec.CodecError:
        return

    def plain(item):
        if isinstance(item, torch.Tensor):
            assert type(item) is torch.Tensor and not item.requires_grad and item.layout == torch.strided
        elif isinstance(item, dict):
            assert all(type(key) is str for key in item)
            for child in item.values():
                plain(child)
        elif isinstance(item, list):
            for child in item:
                plain(child)
        else:
            assert item is None or type(item) in (bool, int, float, str)

    plain(value)


def test_status_errors_name_only_modules_of_the_exercise():
    assert boundary.status_error("timeout", "os").module == ""
    assert boundary.status_error("crash", MODULES[2]).params == {"module": MODULES[2]}
    assert boundary.status_error("too-large", "", 4 * 1024**2).params["limit_mb"] == 4
    for lang in ("en", "zh"):
        for _, key in boundary.STATUSES.values():
            assert Catalog(lang).has(key), (lang, key)


# -- the framed channel --------------------------------------------------------------------------


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        try:
            os.close(fd)
        except OSError:
            pass


def test_frames_are_read_exactly_and_payloads_skipped_without_keeping_them(pipe):
    read_fd, write_fd = pipe
    os.write(write_fd, frame({"a": 1}, b"xyz") + frame({"b": 2}, b"") + frame({"c": 3}, b"0123456789"))
    os.close(write_fd)
    reader, forever = FrameReader(read_fd), until(float("inf"))
    header = reader.header(forever)
    assert header == {"a": 1, "size": 3} and reader.payload(3, forever) == b"xyz"
    assert reader.header(forever) == {"b": 2, "size": 0}
    assert reader.header(forever)["size"] == 10 and reader.skip(10, forever)
    assert reader.header(forever) is None


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">I", 10**9),
        struct.pack(">I", 4) + b"nope",
        struct.pack(">I", 2) + b"[]",
        struct.pack(">I", 13) + b'{"size": -1} ',
        struct.pack(">I", 15) + b'{"size": "big"}',
    ],
)
def test_garbage_is_a_channel_error(pipe, data):
    read_fd, write_fd = pipe
    os.write(write_fd, data)
    with pytest.raises(ChannelError):
        FrameReader(read_fd).header(until(float("inf")))


def test_a_deadline_is_only_what_the_reader_says(pipe):
    read_fd, write_fd = pipe
    os.write(write_fd, struct.pack(">I", 100))  # a header that never comes
    with pytest.raises(TimeoutError):
        FrameReader(read_fd).header(lambda: 0.0)


# -- the trusted side enforces its limits whatever the worker sends ----------------------------

FAKE_WORKER = r"""
import json, os, struct, sys

fd = int(sys.argv[1])


def send(header, payload=b"", chunked=False):
    head = json.dumps(dict(header, size=len(payload))).encode()
    os.write(fd, struct.pack(">I", len(head)) + head)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view[:1 << 20]):]


def document(value, tail=0):
    text = json.dumps(value).encode()
    return struct.pack(">I", len(text)) + text + b"\0" * tail


send({"status": "ready"})
job = json.loads(sys.stdin.readline())
for header, payload in json.loads(sys.argv[2]):
    header = {key: job["id"] if value == "ID" else value for key, value in header.items()}
    if isinstance(payload, list):  # [json value, bytes of padding]
        payload = document(payload[0], payload[1])
    send(header, payload.encode() if isinstance(payload, str) else payload)
sys.stdin.readline()
"""
MIB = 1024**2


def fake_run(frames: list, probes: list[str], budget: int = 5 * MIB):
    import sys
    import time
    import tracemalloc

    from grader.records import Submission
    from grader.sandbox.connection import WorkerConnection, job_record

    worker = WorkerConnection(
        lambda fd: [sys.executable, "-c", FAKE_WORKER, str(fd), json.dumps(frames)], {"PATH": "/usr/bin:/bin"}
    )
    try:
        results, spent = {}, Budget(budget)
        job = job_record(7, Submission("s", Path("."), {}, ""), probes, "grade", {})
        tracemalloc.start()
        done = worker.run(job, results, spent, time.monotonic() + 120, 4 * MIB)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return done, results, peak
    finally:
        worker.kill()


def test_the_trusted_side_holds_to_its_limits_whatever_the_worker_sends():
    ok = {"id": "ID", "status": "ok"}
    frames = [
        [dict(ok, probe="p1"), [{"ok": {"x": 1}}, 0]],
        [dict(ok, probe="p2"), [{"ok": {}}, 64 * MIB]],  # over the per-result limit: skipped as it comes
        [dict(ok, probe="p3"), [{"ok": {"y": 2}}, 3 * MIB]],
        [dict(ok, probe="p4"), [{"ok": {}}, 3 * MIB]],  # within the limit, over what is left of the budget
        [{"id": "ID", "probe": "p5", "status": "timeout", "module": "/etc"}, ""],
        [{"id": "ID", "status": "done"}, ""],
    ]
    done, results, peak = fake_run(frames, ["p1", "p2", "p3", "p4", "p5"])
    assert done
    assert results["p1"] == {"x": 1} and results["p3"] == {"y": 2}
    assert results["p2"].key == "sandbox.output-too-large" and results["p2"].params["limit_mb"] == 4
    assert results["p4"].key == "sandbox.over-budget"
    assert (results["p5"].kind, results["p5"].module) == ("timeout", "")
    assert peak < 12 * MIB  # 70 MB went by; at most one accepted payload (and its decoding) was held


@pytest.mark.parametrize(
    "frame",
    [
        [{"id": 999, "probe": "p1", "status": "ok"}, [{"ok": {}}, 0]],  # another job's
        [{"id": "ID", "probe": "p9", "status": "ok"}, [{"ok": {}}, 0]],  # a probe the job does not have
        [{"id": "ID", "probe": ["p1"], "status": "ok"}, [{"ok": {}}, 0]],
        [{"id": "ID", "probe": "p1", "status": "passed"}, ""],
        [{"id": "ID", "probe": "p1", "status": {"s": 1}}, ""],
        [{"id": "ID", "probe": "p1", "status": "timeout"}, "payload on a status"],
        [{"id": "ID", "status": "done"}, "payload on done"],
    ],
)
def test_a_worker_that_breaks_the_protocol_is_given_up(frame):
    done, results, _ = fake_run([frame, [{"id": "ID", "status": "done"}, ""]], ["p1"])
    assert not done and "p9" not in results


def test_a_result_for_a_probe_that_has_one_already_is_a_broken_protocol():
    ok = {"id": "ID", "probe": "p1", "status": "ok"}
    done, results, _ = fake_run([[ok, [{"ok": {"x": 1}}, 0]], [ok, [{"ok": {"x": 2}}, 0]]], ["p1"])
    assert not done and results["p1"] == {"x": 1}


def test_messages_never_name_the_grading_machines_folders():
    """A typo such as `from torch.nn import Dropuot` raises an ImportError that names the installed
    package's file: the report shows the student the package, not where this machine keeps it."""
    import os
    import site
    import sys

    import torch

    torch_file = os.path.realpath(torch.nn.__file__)
    message = f"cannot import name 'Dropuot' from 'torch.nn' ({torch_file})"
    shown = boundary.text(message, 1000)
    assert shown == "cannot import name 'Dropuot' from 'torch.nn' (…/torch/nn/__init__.py)"
    for folder in {sys.prefix, sys.base_prefix, *site.getsitepackages(), str(Path(boundary.__file__).parents[2])}:
        assert folder not in boundary.text(f"see {folder}/x.py and {os.path.realpath(folder)}/y.py", 1000)
    assert boundary.text("sec3_5_causal_attention.py, line 3", 100) == "sec3_5_causal_attention.py, line 3"


plain_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
        st.sampled_from(["$t", "$f"]),
        st.builds(
            lambda n, dtype: torch.arange(n).to(dtype),
            st.integers(0, 5),
            st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]),
        ),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=4), st.sampled_from(["$t", "$f"])), children, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(plain_values)
def test_the_tracers_fast_encoding_is_the_encoding(value):
    """`codec.encode_plain` (one json.dumps, for the tracer's documents) gives `encode`'s bytes, or
    its error, for anything made of JSON types and tensors: markers and NaNs included."""
    _same_encoding(value)


def _same_encoding(value) -> None:
    try:
        expected = codec.encode(value)
    except codec.CodecError:
        with pytest.raises(codec.CodecError):
            codec.encode_plain(value)
        return
    assert codec.encode_plain(value) == expected


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _List(list):
    def __iter__(self):
        return iter(list(super().__iter__())[::-1])


def _nested(value, depth: int, as_dict: bool):
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


unusual_values = st.recursive(
    st.one_of(
        plain_values,
        st.builds(_Str, st.text(max_size=4)),
        st.builds(_Int, st.integers(-5, 5)),
        st.builds(_Float, st.floats(allow_nan=False)),
        st.builds(
            _nested,
            st.one_of(st.integers(), st.just([]), st.just({}), st.just(torch.zeros(1))),
            st.integers(8, 13),
            st.booleans(),
        ),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.builds(_List, st.lists(children, max_size=3)),
        st.dictionaries(
            st.one_of(st.text(max_size=3), st.booleans(), st.none(), st.integers(-3, 3), st.floats(allow_nan=False)),
            children,
            max_size=3,
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(unusual_values)
def test_the_tracers_fast_encoding_is_the_encoding_for_anything(value):
    """Also for what json.dumps writes otherwise than `encode` (a True key as "true", a str subclass
    as a string, a list subclass in its storage's order, nesting past MAX_DEPTH): the same bytes,
    or a CodecError from both."""
    _same_encoding(value)


def test_an_int_too_long_to_write_is_a_codec_error_in_both_encodings():
    for encode in (codec.encode, codec.encode_plain):
        with pytest.raises(codec.CodecError):
            encode({"ok": [10**5000]})


def _decoded_by_walking(payload: bytes) -> Any:
    """`codec.decode` as it was first written (every value visited, a new container each): the
    meaning the faster decoding keeps."""
    (size,) = struct.unpack(">I", payload[:4])
    document = json.loads(payload[4 : 4 + size].decode("utf-8"))
    blob = memoryview(payload)[4 + size :]

    def walk(item: Any, depth: int) -> Any:
        if depth > codec.MAX_DEPTH:
            raise codec.CodecError("nested too deeply")
        if item is None or type(item) in (bool, int, float, str):
            return item
        if type(item) is list:
            return [walk(x, depth + 1) for x in item]
        if codec.MARK in item:
            return codec._tensor(item[codec.MARK], blob)
        if "$f" in item:
            if len(item) != 1 or type(item["$f"]) is not str or item["$f"] not in ("nan", "inf", "-inf"):
                raise codec.CodecError("bad float")
            return float(item["$f"])
        return {k: walk(v, depth + 1) for k, v in item.items()}

    return walk(document, 0)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
        )
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def _nested(depth: int, leaf: Any) -> Any:
    for level in range(depth):
        leaf = [leaf] if level % 2 else {"k": leaf}
    return leaf


@settings(max_examples=400, deadline=None)
@given(
    st.recursive(
        json_values
        | st.builds(
            lambda d, shape, o, n: {"$t": [d, shape, o, n]},
            tensor_specs,
            st.lists(st.integers(-2, 5), max_size=3),
            st.integers(-4, 64),
            st.integers(-4, 64),
        )
        | st.builds(lambda f: {"$f": f}, st.sampled_from(["nan", "inf", "-inf", "1.0", ""]))
        | st.builds(lambda d: {"$t": [d, [], 0, 0], "other": 1}, st.sampled_from(["float32", "int8"])),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
        max_leaves=12,
    ).flatmap(lambda doc: st.tuples(st.just(doc), st.integers(0, 12))),
    st.binary(max_size=64),
)
def test_decoding_means_what_walking_every_value_meant(document_depth, tail):
    """`codec.decode` skips scalars and rebuilds in place (it is the trusted side's cost of every
    result); for any document, nested up to past MAX_DEPTH, it gives what visiting every value
    gave, or a CodecError where that refused it."""
    document, depth = document_depth
    text = json.dumps(_nested(depth, document)).encode()
    payload = struct.pack(">I", len(text)) + text + tail
    try:
        expected = _decoded_by_walking(payload)
    except (codec.CodecError, TypeError):
        with pytest.raises(codec.CodecError):
            codec.decode(payload)
        return
    assert _same(codec.decode(payload), expected)


def test_decoding_refuses_a_leaf_deeper_than_max_depth_and_keeps_one_at_it():
    for leaf in (1, "x", None, [], {}, {"$f": "nan"}, {"$t": ["float32", [1], 0, 4]}):
        text = json.dumps(_nested(codec.MAX_DEPTH, leaf)).encode()
        codec.decode(struct.pack(">I", len(text)) + text + bytes(4))
    for leaf in (1, "x", None, [1], {"a": 1}):
        text = json.dumps(_nested(codec.MAX_DEPTH + 1, leaf)).encode()
        with pytest.raises(codec.CodecError):
            codec.decode(struct.pack(">I", len(text)) + text + bytes(4))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(codec.DTYPES)), st.lists(st.integers(0, 3), max_size=3), st.data())
def test_a_tensor_is_rebuilt_from_exactly_its_bytes(name, shape, data):
    """Every dtype: the decoded tensor holds the payload's bytes as they are, in the record's shape
    (whatever they are: a bool's byte 7, a NaN's payload)."""
    dtype = codec.DTYPES[name]
    nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    raw = data.draw(st.binary(min_size=nbytes, max_size=nbytes))
    tensor = codec._tensor([name, shape, 0, nbytes], memoryview(raw))
    assert type(tensor) is torch.Tensor and tensor.dtype == dtype and list(tensor.shape) == shape
    assert bytes(tensor.reshape(-1).view(torch.uint8).numpy()) == raw
    with pytest.raises(codec.CodecError):
        codec._tensor([name, shape, 0, nbytes + 1], memoryview(raw + b"\0"))
