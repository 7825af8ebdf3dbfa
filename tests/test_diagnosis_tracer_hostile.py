"""The tracer against code under test that meddles with what it relies on: trace and profile
hooks, audit hooks, its own mode, uninitialised memory, storages that move. Whatever the code
does, its probe's result is the untraced one (unless the code looks at the tracer itself, e.g.
`sys.gettrace()`, which no design can hide), the hooks are put back after the run, traces of the
same code are identical, and no value is recorded from memory nobody wrote."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from in_process import run_probes, student_modules, trace_probes

from grader.diagnosis.trace.documents import fingerprint
from grader.probes import PROBES, load_all
from grader.probes.tracer import traced
from grader.sandbox import driver
from grader.sandbox.pool import result_from_record
from tests.conftest import solutions_as_submission

load_all()
PROBE = "sec3_3_simple_attention:attention_weights"


def _submission(tmp_path, code: str, module: str = "sec3_3_simple_attention"):
    submission = solutions_as_submission(tmp_path / "submission")
    path = submission / f"{module}.py"
    path.write_text(path.read_text() + "\n" + textwrap.dedent(code))
    return submission


def _traced_result(submission, probe: str = PROBE):
    """The probe's result as the traced run computed it."""
    with student_modules(submission) as ns:
        record = traced(driver.run_probe, PROBES[probe], ns, ns.directory)
    record.pop("trace")
    return result_from_record(record)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _untraced_and_traced_agree(submission, probe: str = PROBE) -> bool:
    return _same(run_probes(submission, [probe])[probe], _traced_result(submission, probe))


def test_a_trace_hook_the_code_sets_inside_an_op_is_its_own(tmp_path):
    submission = _submission(
        tmp_path,
        """
        import sys
        _seen = [0]

        def _mine(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "_helper":
                _seen[0] += 1

        def _arm(v):
            sys.settrace(_mine)  # from a callback torch calls
            return v

        def _helper():
            return 1

        def attention_weights(inputs):
            _seen[0] = 0
            torch.zeros(1).apply_(_arm)
            _helper()
            sys.settrace(None)
            return torch.softmax(inputs @ inputs.T, dim=-1) + _seen[0]
        """,
    )
    assert _untraced_and_traced_agree(submission)
    assert sys.gettrace() is None


def test_sys_settrace_replaced_by_the_code_changes_nothing(tmp_path):
    submission = _submission(
        tmp_path,
        """
        import sys
        _real = sys.settrace

        def _refuse(function):
            raise RuntimeError("settrace refused")

        def attention_weights(inputs):
            sys.settrace = _refuse
            try:
                return torch.softmax(inputs @ inputs.T, dim=-1)
            finally:
                sys.settrace = _real
        """,
    )
    assert _untraced_and_traced_agree(submission)
    assert sys.gettrace() is None


def test_an_audit_hook_that_refuses_settrace_changes_nothing(tmp_path):
    """Audit hooks cannot be removed: the check runs in a process of its own."""
    submission = _submission(
        tmp_path,
        """
        import sys
        if not hasattr(sys, "_armed"):
            sys._armed = [False]
            def _audit(event, args, armed=sys._armed):
                if event == "sys.settrace" and armed[0]:
                    raise RuntimeError("no tracing while I compute")
            sys.addaudithook(_audit)

        def attention_weights(inputs):
            sys._armed[0] = True
            try:
                return torch.softmax(inputs @ inputs.T, dim=-1)
            finally:
                sys._armed[0] = False
        """,
    )
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from tests import test_diagnosis_tracer_hostile as t
        agree = t._untraced_and_traced_agree(Path({str(submission)!r}))
        sys.exit(0 if agree and sys.gettrace() is None else 1)
        """)
    assert subprocess.run([sys.executable, "-c", script], timeout=300).returncode == 0


def test_the_hooks_found_are_put_back_after_the_code_sets_a_profile_or_enters_the_mode_again(tmp_path):
    submission = _submission(
        tmp_path,
        """
        import sys
        import torch.overrides

        def _profile(frame, event, arg):
            return None

        def attention_weights(inputs):
            sys.setprofile(_profile)
            stack = torch.overrides._get_current_function_mode_stack()
            if stack:
                with stack[-1]:
                    pass
            return torch.softmax(inputs @ inputs.T, dim=-1)
        """,
    )
    try:
        trace_probes(submission, [PROBE])
        hooks = (sys.gettrace(), sys.getprofile())
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    assert hooks == (None, None)


def test_calls_keep_their_result_and_return_line_however_they_end(tmp_path):
    submission = _submission(
        tmp_path,
        """
        def _gen(x):
            yield x @ x.T

        def _helper(x):
            return torch.softmax(x, dim=-1)

        def _pure(n):
            return sum(range(n))

        def attention_weights(inputs):
            try:
                torch.zeros(2) @ torch.zeros(3)
            except RuntimeError:
                pass
            out = _helper(next(_gen(inputs)))
            _pure(100)  # Python work after the last op
            return out
        """,
    )
    trace = trace_probes(submission, [PROBE])[PROBE]
    calls = [c for c in trace["calls"] if c["function"] == "attention_weights"]
    assert len(calls) == 3 and all(c["result"] and c.get("returned") for c in calls)  # one per input of the probe
    assert fingerprint(trace) == fingerprint(trace_probes(submission, [PROBE])[PROBE])


def test_a_call_the_code_makes_torch_run_inside_the_probe_s_backward_is_recorded(tmp_path):
    submission = _submission(
        tmp_path,
        """
        class _Twice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad):
                return grad * 1.0

        _v2_forward = SelfAttention_v2.forward

        def _forward(self, x):
            return _Twice.apply(_v2_forward(self, x))

        SelfAttention_v2.forward = _forward
        """,
        module="sec3_4_self_attention",
    )
    probe = "sec3_4_self_attention:gradients"
    trace = trace_probes(submission, [probe])[probe]
    backward = [c for c in trace["calls"] if c["function"] == "backward"]
    assert backward and backward[0]["result"] and backward[0]["returned"]


def _poison(value: float) -> None:
    """Freed blocks of the sizes the code asks for, holding `value`: what torch.empty may hand out."""
    blocks = [torch.full((k, k), value) for k in (5, 6, 7) for _ in range(50)]
    del blocks


UNINITIALISED = {
    "empty": "t = torch.empty(n, n)",
    "view": "t = torch.empty(n * n).view(n, n)",
    "slice": "t = torch.empty(n, n + 1)[:, :n]",
    "data": "t = torch.empty(n, n).data",
    "empty_permuted": "t = torch.empty_permuted((n, n), (0, 1))",
    "new_empty_strided": "t = inputs.new_empty_strided((n, n), (n, 1))",
    "resize_": "t = torch.zeros(1).resize_(n, n)",
}


@pytest.mark.parametrize("fill", ["whole", "row by row"])
@pytest.mark.parametrize("make", UNINITIALISED)
def test_no_value_is_recorded_from_memory_nobody_wrote(tmp_path, make, fill):
    write = "t.copy_(weights)" if fill == "whole" else "for i in range(n):\n                t[i] = weights[i]"
    submission = _submission(
        tmp_path,
        f"""
        def attention_weights(inputs):
            n = inputs.shape[0]
            weights = torch.softmax(inputs @ inputs.T, dim=-1)
            {UNINITIALISED[make]}
            {write}
            return t
        """,
    )
    _poison(111.0)
    first = trace_probes(submission, [PROBE])[PROBE]
    _poison(222.0)
    second = trace_probes(submission, [PROBE])[PROBE]
    assert not [n for n in first["nodes"] if "value" in n and (n["value"] == 111.0).any()]
    assert fingerprint(first) == fingerprint(second)
    last = first["nodes"][first["calls"][-1]["result"][0]]
    assert "value" in last  # once written, the output has its value


def test_a_parameter_of_empty_memory_the_probe_fills_keeps_its_value(tmp_path):
    submission = _submission(
        tmp_path,
        """
        class SelfAttention_v1(nn.Module):
            def __init__(self, d_in, d_out):
                super().__init__()
                self.W_query = nn.Parameter(torch.empty(d_in, d_out))
                self.W_key = nn.Parameter(torch.empty(d_in, d_out))
                self.W_value = nn.Parameter(torch.empty(d_in, d_out))

            def forward(self, x):
                keys, queries, values = x @ self.W_key, x @ self.W_query, x @ self.W_value
                weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
                return weights @ values
        """,
        module="sec3_4_self_attention",
    )
    probe = "sec3_4_self_attention:v1_transplanted"
    trace = trace_probes(submission, [probe])[probe]
    forward = {i for i, c in enumerate(trace["calls"]) if c["function"] == "forward"}
    matmuls = [op for op in trace["ops"] if op["call"] in forward and op["name"] in ("__matmul__", "matmul")][:3]
    assert len(matmuls) == 3 and all("value" in trace["nodes"][op["in"][-1]] for op in matmuls)


def test_memory_a_resize_freed_is_no_origin_of_a_later_tensor(tmp_path):
    submission = _submission(
        tmp_path,
        """
        import numpy as np
        _kept = []

        def attention_weights(inputs):
            a = torch.empty(64)
            _kept.append(a)
            a.resize_(100000)  # its old memory is freed
            b = torch.from_numpy(np.ones(64, dtype=np.float32))  # made by no op the tracer sees
            c = b * 2
            return torch.softmax(inputs @ inputs.T, dim=-1) + 0 * c.sum()
        """,
    )
    trace = trace_probes(submission, [PROBE])[PROBE]
    empties = {i for i, n in enumerate(trace["nodes"]) if n["op"] >= 0 and trace["ops"][n["op"]]["name"] == "empty"}
    leaves = [
        trace["nodes"][i] for op in trace["ops"] if op["name"] == "mul" for i in op["in"] if trace["nodes"][i]["op"] < 0
    ]
    assert leaves and not any(leaf.get("origin") in empties for leaf in leaves)
    assert all("value" in leaf for leaf in leaves)
