"""The tracer (grader/probes/tracer.py) and the validation of what it sends (grader/diagnosis/trace/documents.py).

A trace comes from student code: it must never change what the probe returns, must stay within
its caps however much the code computes, and the trusted side accepts only the documented
structure (any other document is a TraceError, never a crash).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from in_process import run_probes, student_modules, trace_probes

from grader.diagnosis.trace.documents import Received, TraceError, documents_of, fingerprint, parse_trace
from grader.diagnosis.walk.checkpoints import SOLUTIONS_DIR, reference
from grader.diagnosis.walk.recognise import analyse
from grader.probes import PROBES, load_all, tracer
from grader.probes.tracer import traced
from grader.reference_code import ModuleNamespace
from grader.sandbox import codec, driver
from grader.sandbox.driver import run_probe
from tests.conftest import solutions_as_submission

load_all()
CAUSAL = "sec3_5_causal_attention:matches_reference"


def _reference_document(probe: str = CAUSAL) -> dict:
    return traced(run_probe, PROBES[probe], ModuleNamespace("solutions"), str(SOLUTIONS_DIR))["trace"]


def test_the_tracer_records_ops_arguments_lines_and_values():
    trace = parse_trace(_reference_document())
    softmax = [op for op in trace.ops if op.name == "softmax"]
    assert softmax and all(op.kwargs.get("dim") == -1 for op in softmax)
    assert {op.site.file for op in trace.ops} == {"sec3_5_causal_attention.py"}
    source = (SOLUTIONS_DIR / "sec3_5_causal_attention.py").read_text().splitlines()
    assert all("softmax" in source[op.site.line - 1] for op in softmax)
    assert any(op.name == "masked_fill_" for op in trace.ops)
    assert all(trace.nodes[out].value is not None for op in softmax for out in op.outputs)
    forwards = [call for call in trace.calls if call.function == "forward"]
    assert len(forwards) == 5 and all(call.result and call.returned for call in forwards)
    assert "x" in forwards[0].args


def test_tracing_never_changes_a_result(tmp_path):
    submission = solutions_as_submission(tmp_path / "solutions")
    probes = [
        "sec3_3_simple_attention:context_vectors",
        CAUSAL,
        "sec3_5_causal_attention:train_mode",
        "sec3_6_multi_head_attention:mha_dropout",
        "exercise3_1_weight_transfer:square",
    ]
    plain = run_probes(submission, probes)
    documents = trace_probes(submission, probes)
    for probe in probes:
        again = run_probes(submission, [probe])[probe]
        for key, value in plain[probe].items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, again[key]), (probe, key)
        assert parse_trace(documents[probe]).ops


def test_a_trace_stays_within_its_caps_and_says_so(tmp_path):
    submission = solutions_as_submission(tmp_path / "loop")
    path = submission / "sec3_3_simple_attention.py"
    path.write_text(
        path.read_text()
        + """

def attention_scores(inputs):
    total = inputs @ inputs.T
    for _ in range(20000):
        total = total + 0.0 * torch.rand(200, 200).sum()
    return total
"""
    )
    probe = "sec3_3_simple_attention:attention_scores"
    document = trace_probes(submission, [probe])[probe]
    trace = parse_trace(document)
    assert trace.truncated and len(trace.ops) <= tracer.MAX_OPS
    assert sum(n.value.numel() for n in trace.nodes if n.value is not None) <= tracer.MAX_ELEMENTS
    assert isinstance(run_probes(submission, [probe])[probe]["book"], torch.Tensor)


def test_code_that_switches_the_tracer_off_only_loses_its_own_trace(tmp_path):
    submission = solutions_as_submission(tmp_path / "hostile")
    path = submission / "sec3_3_simple_attention.py"
    path.write_text(
        path.read_text()
        + """

import sys
from torch.overrides import _pop_mode_temporarily


def attention_weights(inputs):
    sys.setprofile(None)
    sys.settrace(None)
    try:
        with _pop_mode_temporarily():
            return torch.softmax(inputs @ inputs.T, dim=-1)
    except Exception:
        return torch.softmax(inputs @ inputs.T, dim=-1)
"""
    )
    probe = "sec3_3_simple_attention:attention_weights"
    document = trace_probes(submission, [probe])[probe]
    parse_trace(document)  # still a valid document (perhaps an empty one)
    assert sys_profile_is_restored()


def sys_profile_is_restored() -> bool:
    import sys

    return sys.getprofile() is None and sys.gettrace() is None


def test_a_reference_trace_is_labelled_with_its_declared_checkpoints():
    instances = reference(CAUSAL).instances
    assert len(instances) == 5
    assert instances[0].order == [
        "keys",
        "queries",
        "values",
        "scores",
        "masked",
        "scaled",
        "weights",
        "dropped",
        "context",
    ]
    assert math.isclose(instances[0].context.divisor, 8**0.5)
    assert instances[0].context.hidden.shape == (5, 5)


def test_the_recogniser_finds_nothing_wrong_in_the_reference():
    for probe in (
        "sec3_3_simple_attention:context_vectors",
        CAUSAL,
        "sec3_6_multi_head_attention:mha_forward",
        "sec3_6_multi_head_attention:wrapper_forward",
        "exercise3_1_weight_transfer:square",
    ):
        finding = analyse(reference(probe), parse_trace(_reference_document(probe)))
        assert not finding.mistakes and finding.departure is None and finding.construction is None, probe


# -- untrusted documents ---------------------------------------------------------------------------------
def _mutations(document: dict):
    """Paths into a document (for hypothesis to pick one and put something else there)."""
    paths = []

    def walk(value, path):
        paths.append(path)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + (key,))
        elif isinstance(value, list):
            for index, item in enumerate(value[:6]):
                walk(item, path + (index,))

    walk(document, ())
    return paths


SMALL = _reference_document("sec3_3_simple_attention:context_vector_for_query")
PATHS = _mutations(SMALL)
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**9), 10**9),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.integers(-5, 5), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just({"node": 10**6}),
    st.just({"node": -5}),
    st.just(torch.zeros(3)),
    st.just(torch.zeros(10**4 + 7)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), JUNK)
def test_any_changed_document_is_read_or_refused_never_a_crash(path, junk):
    document = copy.deepcopy(SMALL)
    if not path:
        document = junk
    else:
        target = document
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = junk
    try:
        trace = parse_trace(document)
    except TraceError:
        return
    analyse(reference("sec3_3_simple_attention:context_vector_for_query"), trace)  # a valid one is read safely


def test_documents_over_the_caps_are_refused():
    document = copy.deepcopy(SMALL)
    document["ops"] = document["ops"] * (tracer.MAX_OPS // max(len(document["ops"]), 1) + 2)
    with pytest.raises(TraceError):
        parse_trace(document)
    document = copy.deepcopy(SMALL)
    document["nodes"][0]["value"] = torch.zeros(tracer.MAX_VALUE + 1)
    document["nodes"][0]["shape"] = [tracer.MAX_VALUE + 1]
    with pytest.raises(TraceError):
        parse_trace(document)
    document = copy.deepcopy(SMALL)
    document["ops"][0]["stack"][0][0] = "/etc/passwd"
    with pytest.raises(TraceError):
        parse_trace(document)


def _same_content(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is torch.Tensor:
        return (
            a.dtype == b.dtype
            and a.shape == b.shape
            and bool(
                torch.equal(a, b) or (a.isnan() == b.isnan()).all() and torch.equal(a.nan_to_num(), b.nan_to_num())
            )
        )
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same_content(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same_content(x, y) for x, y in zip(a, b))
    return a == b or (type(a) is float and math.isnan(a) and math.isnan(b))


def test_a_trace_of_the_same_code_repeats_uninitialised_memory_is_not_recorded():
    """Findings are shared between identical traces: a trace must not depend on what memory held
    (torch.empty before its initialisation, as nn.Linear makes its weights)."""
    probe = "sec3_6_multi_head_attention:mha_forward"
    _reference_document(probe)  # the module imported (a first run traces its import too)
    first, second = _reference_document(probe), _reference_document(probe)
    empty = [n for n in first["nodes"] if n["op"] >= 0 and first["ops"][n["op"]]["name"] in tracer.UNINITIALISED]
    assert empty and all("value" not in n for n in empty)
    # nor anything else that shows memory nobody wrote: tests/test_diagnosis_tracer_hostile.py
    assert fingerprint(first) == fingerprint(second)


CALLBACKS = """
import sys
import torch

seen = []


def compute(x):
    x.clone().apply_(lambda v: seen.append(sys.gettrace()) or v)  # Python run by an op
    seen.append(sys.gettrace())
    return x * 2


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""


def _student_module(tmp_path, source: str):
    import importlib.util

    path = tmp_path / "callbacks.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"callbacks_{id(path)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ops_in_a_call_run_with_the_trace_hook_off_and_find_it_on_again(tmp_path):
    """The trace hook slows every Python call made while it is set: an op of the code under test
    and its recording run without it (what the op runs is a nested call); the call's return needs
    it back. The probe's own ops keep it: they may run the code under test (see the next test)."""
    import sys

    module = _student_module(tmp_path, CALLBACKS)
    recorder = tracer.Tracer(str(tmp_path))
    outside: list = []
    with recorder:
        torch.ones(1).apply_(lambda v: outside.append(sys.gettrace()) or v)
        module.compute(torch.ones(2))
    assert module.seen == [None, None, recorder._call] and outside == [recorder._call]  # apply_: once per element
    assert sys.gettrace() is None
    call = next(call for call in recorder.calls if call["function"] == "compute")
    assert call["result"] and call["returned"]


def test_a_call_of_the_code_under_test_made_by_a_probe_s_op_is_recorded(tmp_path):
    """Autograd runs a Function's backward (the student's) inside the probe's .backward(): an
    outermost call, with its result and line."""
    module = _student_module(tmp_path, CALLBACKS)
    recorder = tracer.Tracer(str(tmp_path))
    x = torch.ones(3, requires_grad=True)
    with recorder:
        module.Twice.apply(x).sum().backward()
    backward = [call for call in recorder.calls if call["function"] == "backward"]
    assert backward and backward[0]["result"] and backward[0]["returned"]
    assert torch.equal(x.grad, torch.full((3,), 2.0))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([p for p in PATHS if p]), JUNK)
def test_a_changed_trace_that_parses_has_another_fingerprint(path, junk):
    document = copy.deepcopy(SMALL)
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = junk
    try:
        parse_trace(document)
    except TraceError:
        return
    assert (fingerprint(document) == fingerprint(SMALL)) == _same_content(document, SMALL)


def test_identical_traces_are_analysed_once(monkeypatch):
    from grader.diagnosis import evidence

    calls = []
    real = evidence.recognise.analyse
    monkeypatch.setattr(evidence.recognise, "analyse", lambda ref, trace: calls.append(1) or real(ref, trace))
    probe = "sec3_3_simple_attention:context_vector_for_query"
    findings = evidence.Findings()
    first = findings.get(probe, SMALL)
    assert findings.get(probe, copy.deepcopy(SMALL)) is first and len(calls) == 1
    changed = copy.deepcopy(SMALL)
    value = next(n for n in changed["nodes"] if "value" in n)
    value["value"] = value["value"] + 1
    findings.get(probe, changed)
    assert len(calls) == 2
    assert findings.get(probe, {"ops": "junk"}) is None and len(calls) == 2


def test_a_trace_received_again_is_neither_parsed_nor_analysed_again(monkeypatch):
    """A trace that came from the sandbox is known by its payload's digest (`SandboxRun.digests`):
    the same payload again (copies of one wrong code) costs a lookup; another payload, with the
    same content or not, is parsed and analysed as before."""
    from grader.diagnosis import evidence

    parsed, analysed = [], []
    real_parse, real_analyse = evidence.parse_trace, evidence.recognise.analyse
    monkeypatch.setattr(evidence, "parse_trace", lambda document: parsed.append(1) or real_parse(document))
    monkeypatch.setattr(
        evidence.recognise, "analyse", lambda ref, trace: analysed.append(1) or real_analyse(ref, trace)
    )
    probe = "sec3_3_simple_attention:context_vector_for_query"
    findings = evidence.Findings()
    first = findings.get(probe, Received(SMALL, b"a" * 32))
    assert findings.get(probe, Received(copy.deepcopy(SMALL), b"a" * 32)) is first
    assert (len(parsed), len(analysed)) == (1, 1)
    findings.get(probe, Received(copy.deepcopy(SMALL), b"b" * 32))
    assert len(parsed) == 2
    assert findings.get(probe, Received({"ops": "junk"}, b"c" * 32)) is None
    received = documents_of({probe: {"trace": SMALL}, "other:probe": {"error": 1}}, {probe: b"d" * 32})
    assert list(received) == [probe] and received[probe].document is SMALL and received[probe].digest == b"d" * 32


# -- the packed form a trace travels in (grader.sandbox.driver.packed) ---------------------------


def _wire(document: dict) -> dict:
    """A document as the trusted side receives it from the sandbox: packed, encoded, decoded."""
    from grader.sandbox import boundary, codec
    from grader.sandbox.driver import packed

    return boundary.decode(codec.encode_plain({"ok": {"trace": packed(document)}}))["trace"]


def test_a_packed_trace_reads_as_the_trace_it_packs():
    for probe in (CAUSAL, "sec3_6_multi_head_attention:mha_forward", "sec3_3_simple_attention:softmax_naive"):
        document = _reference_document(probe)
        wire = _wire(document)
        assert set(wire["values"]) and all(type(node.get("value", 0)) is int for node in wire["nodes"])
        plain, packed_trace = parse_trace(document), parse_trace(wire)
        assert [(n.shape, n.dtype, n.op, n.origin) for n in plain.nodes] == [
            (n.shape, n.dtype, n.op, n.origin) for n in packed_trace.nodes
        ]
        assert all(
            (a.value is None) == (b.value is None) and (a.value is None or _same_content(a.value, b.value))
            for a, b in zip(plain.nodes, packed_trace.nodes)
        )
        assert analyse(reference(probe), plain) == analyse(reference(probe), packed_trace)


PACKED = _wire(SMALL)
VALUED = next(i for i, n in enumerate(PACKED["nodes"]) if "value" in n)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["offset", "dtype", "values", "flat", "shape"]),
    st.integers(-(10**12), 10**12),
    st.sampled_from(
        [
            torch.zeros(3),
            torch.zeros(2, 2),
            torch.zeros(3, dtype=torch.int64),
            torch.zeros(tracer.MAX_ELEMENTS + 1),
            torch.zeros(0),
        ]
    ),
)
def test_a_forged_packed_value_is_read_within_bounds_or_refused(field, number, tensor):
    document = copy.deepcopy(PACKED)
    node = document["nodes"][VALUED]
    if field == "offset":
        node["value"] = number
    elif field == "dtype":
        node["dtype"] = "int64"
    elif field == "values":
        document["values"] = {"float32": tensor}
    elif field == "flat":
        document["values"] = {str(tensor.dtype).removeprefix("torch."): tensor}
    else:
        node["shape"] = [abs(number) % 5000, 3]
    try:
        trace = parse_trace(document)
    except TraceError:
        return
    value = trace.nodes[VALUED].value
    assert value is not None and list(value.shape) == node["shape"] and value.numel() <= tracer.MAX_VALUE
    analyse(reference("sec3_3_simple_attention:context_vector_for_query"), trace)


def test_a_test_blocked_by_another_broken_module_is_not_traced_unless_blame_moves_it():
    """An exception that surfaced in a broken earlier module blocks the test: it gets no diagnosis of
    its own, so its probes are not traced. When that module passes its tests, the cause is the
    caller's (grader.diagnosis.blame) and the probes are traced."""
    from grader.diagnosis import Diagnoser
    from grader.probe_outputs import ProbeOutputs
    from grader.records import ProbeError, TestOutcome

    diagnoser = Diagnoser(ProbeOutputs({}), [])
    error = ProbeError(
        kind="exception", key="exception.raised", module="sec3_6_multi_head_attention", exc_type="RuntimeError"
    )
    probe = "exercise3_3_gpt2_attention:forward"
    student = ProbeOutputs({probe: error})

    def outcomes(mha: str) -> list[TestOutcome]:
        blocked = TestOutcome(
            id="exercise3_3_gpt2_attention::test_forward",
            module="exercise3_3_gpt2_attention",
            name="test_forward",
            section="ex3.3",
            status="failed",
            points=0.0,
            max_points=1.0,
            error=error,
            blocked_by="sec3_6_multi_head_attention",
            probes=(probe,),
        )
        own = TestOutcome(
            id="sec3_6_multi_head_attention::test_mha",
            module="sec3_6_multi_head_attention",
            name="test_mha",
            section="3.6",
            status=mha,
            points=0.0,
            max_points=1.0,
        )
        return [own, blocked]

    assert diagnoser.probes_to_trace(outcomes("failed"), student) == []
    assert diagnoser.probes_to_trace(outcomes("passed"), student) == [probe]


def test_a_trace_of_odd_arguments_still_travels(tmp_path):
    """Arguments the tracer keeps as they are, whatever they are: a slice nested in slices (deeper
    than the wire format allows) and an int too long to write as text, each in an op that raised.
    The child still sends a document (cut where it must be), which the trusted side reads; its
    trace job never fails on them."""
    from grader.sandbox import boundary

    submission = solutions_as_submission(tmp_path / "odd")
    path = submission / "sec3_3_simple_attention.py"
    path.write_text(
        path.read_text()
        + """

def attention_scores(inputs, _deep=0):
    for _ in range(12):
        _deep = slice(_deep)
    for odd in (lambda: inputs[_deep], lambda: inputs.add(10 ** 5000)):
        try:
            odd()
        except Exception:
            pass
    return inputs @ inputs.T
"""
    )
    probe = "sec3_3_simple_attention:attention_scores"
    with student_modules(submission) as ns:
        alone = driver.StudentNamespace(ns.directory)
        payload = driver.trace_probe(PROBES[probe], alone, alone.directory)
    received = boundary.result_from_record(codec.decode(payload))
    parse_trace(received["trace"])


@pytest.mark.parametrize("shape", [[0, 2**63], [2**64, 0], [0, 10**30], [0, 2**62, 2**62], [2**40, 0]])
def test_a_packed_value_of_no_elements_and_a_huge_shape_is_read_or_refused(shape):
    """No elements to read, whatever the shape says: a size torch cannot hold is refused, not a
    TypeError out of torch."""
    document = copy.deepcopy(PACKED)
    node = document["nodes"][VALUED]
    node["shape"], node["value"] = shape, 0
    try:
        trace = parse_trace(document)
    except TraceError:
        return
    assert list(trace.nodes[VALUED].value.shape) == shape
    analyse(reference("sec3_3_simple_attention:context_vector_for_query"), trace)
