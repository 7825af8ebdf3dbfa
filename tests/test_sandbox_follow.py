"""Jobs to follow up (`SandboxPool.submit(follow=True)`): a submission's failed probes are traced
in the child that graded it, which parks after its last probe, stopped, until the trusted side
says what follows. The follow-up must trace exactly what a trace job of its own traces, fall back
to a fresh child whenever the parked one cannot take it, and never let the parked child run."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from cpu import tree_cpu

from grader.diagnosis.trace.documents import parse_trace
from grader.intake.discovery import read_submission
from grader.probes import PROBES, load_all
from grader.records import ProbeError
from grader.sandbox.pool import Limits, SandboxPool
from tests.test_sandbox import solution_source, write_solutions

LIMITS = Limits(probe_seconds=5, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30)
MODULE = "sec3_3_simple_attention"
SCORES = f"{MODULE}:attention_scores"  # a probe of `attention_scores(inputs)`
LAST = "softmax_naive"  # the probe (and function) graded last: `in_order`
# the process that runs the code under test, in its output (graded) and in its trace (traced)
PID_IN_SCORES = """
import os as _os

def attention_scores(inputs):
    return torch.full((inputs.shape[0], inputs.shape[0]), float(_os.getpid()))
"""


def submission_with(tmp_path: Path, name: str, extra: str) -> object:
    folder = write_solutions(tmp_path / name, note=name)
    (folder / f"{MODULE}.py").write_text(solution_source(MODULE) + extra)
    return read_submission(folder)


def graded_then_followed(submission, probes: list[str], traced: list[str], decide=None, limits: Limits = LIMITS):
    """The grade run of `probes` (a job to follow) and the run of its follow-up tracing `traced`."""
    with SandboxPool(1, limits, probes=probes) as pool:
        pool.submit(submission, follow=True)
        runs = {}
        for run in pool.results():
            runs[run.mode] = run
            if run.mode == "grade":
                if decide is not None:
                    decide(pool)
                pool.follow_up(run, traced, "trace", seconds=60)
    return runs["grade"], runs["trace"]


def in_order() -> list[str]:
    """The module's probes, `LAST` last."""
    load_all()
    probes = sorted(name for name in PROBES if name.startswith(MODULE))
    return [name for name in probes if name != f"{MODULE}:{LAST}"] + [f"{MODULE}:{LAST}"]


def pid_in_trace(document: dict) -> float:
    trace = parse_trace(document)
    full = [op for op in trace.ops if op.name == "full"]
    return float(trace.nodes[full[0].outputs[0]].value.flatten()[0])  # the probe's first call


def test_a_follow_up_is_traced_in_the_child_that_graded(tmp_path):
    probes = in_order()
    grade_run, trace_run = graded_then_followed(submission_with(tmp_path, "pid", PID_IN_SCORES), probes, [SCORES])
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) == graded_pid


def test_a_child_that_leaves_a_thread_is_not_kept_and_a_fresh_one_traces(tmp_path):
    """The last probe leaves a thread behind: that child must end (`child.left_behind`), and the
    follow-up runs in a new one, with the same results."""
    probes, last = in_order(), LAST
    thread = (
        PID_IN_SCORES
        + f"""
import threading as _threading
import time as _time
_{last} = {last}

def {last}(*args, **kwargs):
    _threading.Thread(target=_time.sleep, args=(20,), daemon=True).start()
    return _{last}(*args, **kwargs)
"""
    )
    grade_run, trace_run = graded_then_followed(submission_with(tmp_path, "thread", thread), probes, [SCORES])
    assert all(isinstance(result, dict) for result in grade_run.results.values()), grade_run.results
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) != graded_pid


@pytest.mark.parametrize("file", ["", '__file__ = "/nonexistent/elsewhere.py"'], ids=["own-file", "foreign-file"])
def test_a_follow_up_traces_what_a_trace_job_traces(tmp_path, file):
    """Module-level code and state the earlier probes left: the follow-up imports the student's
    modules afresh, so its trace is byte for byte a trace job's (a mask made once, on the first
    call, and kept in a module-level dict, is made and traced again), whatever file the module
    says it comes from."""
    load_all()
    cached_mask = (
        file
        + """
_MASKS = {}
_plain_weights = attention_weights

def attention_weights(inputs):
    n = inputs.shape[0]
    if n not in _MASKS:
        _MASKS[n] = torch.triu(torch.ones(n, n), diagonal=1)
    return _plain_weights(inputs) * (1 - 0 * _MASKS[n])
"""
    )
    submission = submission_with(tmp_path, "cached", cached_mask)
    probes = in_order()
    traced = [name for name in probes if "weights" in name] + [SCORES]
    assert len(traced) >= 2
    _, followed = graded_then_followed(submission, probes, traced)
    with SandboxPool(1, LIMITS, probes=probes) as pool:
        pool.submit(submission, traced, mode="trace")
        (alone,) = list(pool.results())
    assert set(followed.digests) == set(traced)
    assert followed.digests == alone.digests
    triu = [op for op in parse_trace(followed.results[traced[0]]["trace"]).ops if op.name == "triu"]
    assert triu, "the mask made at the first call is traced again"


def test_a_parked_child_does_not_run(tmp_path):
    """The last probe sets a timer whose handler spins for a second of CPU time: the parked child,
    stopped and with its signals blocked, spends none while the trusted side takes its time to
    decide (the handler runs once the child goes on, on the traced probe's own clock)."""
    probes, last = in_order(), LAST
    spin = (
        PID_IN_SCORES
        + f"""
import signal as _signal
_{last} = {last}

def _spin(*args):
    import time
    started = time.process_time()
    while time.process_time() - started < 1.0:
        pass

def {last}(*args, **kwargs):
    _signal.signal(_signal.SIGALRM, _spin)
    _signal.setitimer(_signal.ITIMER_REAL, 0.3)
    return _{last}(*args, **kwargs)
"""
    )
    spent = []

    def wait_and_measure(pool):
        before = tree_cpu(os.getpid())
        time.sleep(2.0)
        spent.append(tree_cpu(os.getpid()) - before)

    grade_run, trace_run = graded_then_followed(
        submission_with(tmp_path, "spin", spin), probes, [SCORES], wait_and_measure
    )
    assert all(isinstance(result, dict) for result in grade_run.results.values()), grade_run.results
    assert spent[0] < 0.5, spent  # the handler would have spent a second
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) == graded_pid  # it was parked, not replaced


def test_a_child_with_a_hidden_thread_and_process_is_not_kept(tmp_path):
    """The last probe tells the child it left nothing behind (its own `left_behind` replaced, through
    the globals of the child's frame: Python has no isolation inside one process) while
    a thread spins and a process it forked keeps sending SIGCONT: such a child is not kept (it has
    two threads and a child process), so nothing of it runs while the trusted side decides, and a
    fresh child traces."""
    probes, last = in_order(), LAST
    hidden = (
        PID_IN_SCORES
        + f"""
import os as _os, sys as _sys, threading as _th, time as _t, signal as _sig
_{last} = {last}

def _background():
    if _os.fork() == 0:
        end = _t.monotonic() + 15
        while _t.monotonic() < end:
            _os.kill(_os.getppid(), _sig.SIGCONT)
            _t.sleep(0.001)
        _os._exit(0)
    end = _t.monotonic() + 15
    while _t.monotonic() < end:
        pass

def {last}(*args, **kwargs):
    _f = _sys._getframe()
    while _f.f_code.co_name != "_run_probes":  # the kit is out of sys.modules: its frames' globals
        _f = _f.f_back
    _f.f_globals["left_behind"] = lambda: False
    _th.Thread(target=_background, daemon=True).start()
    return _{last}(*args, **kwargs)
"""
    )
    spent = []

    def wait_and_measure(pool):
        time.sleep(0.5)  # the watcher has ended the child by now (it found it not alone)
        before = tree_cpu(os.getpid())
        time.sleep(2.0)
        spent.append(tree_cpu(os.getpid()) - before)

    grade_run, trace_run = graded_then_followed(
        submission_with(tmp_path, "hidden", hidden), probes, [SCORES], wait_and_measure
    )
    assert spent[0] < 0.5, spent  # a spinning thread would have spent two seconds
    # the SIGCONTs never keep the watcher waiting for a stop (it once waited out the job's time)
    assert grade_run.seconds < LIMITS.submission_seconds / 2, grade_run.seconds
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) != graded_pid


@pytest.mark.parametrize("follow", [False, True], ids=["alone", "to-follow"])
def test_the_last_result_does_not_depend_on_following(tmp_path, follow):
    """Code that breaks what the child calls to park (signal.pthread_sigmask raises) costs the
    student nothing: the last result is sent before the child parks."""
    broken = (
        "\nimport signal as _s\n\ndef _refuse(*args, **kwargs):\n    raise RuntimeError\n\n"
        "_s.pthread_sigmask = _refuse\n"
    )
    submission = submission_with(tmp_path, "mask", broken)
    with SandboxPool(1, LIMITS, probes=in_order()) as pool:
        pool.submit(submission, follow=follow)
        for run in pool.results():
            pool.release(run)
    assert all(isinstance(result, dict) for result in run.results.values()), run.results


def test_a_follow_up_never_ends_by_the_parked_childs_cpu_limit(tmp_path):
    """The grade probes use all but a second of the child's CPU limit (RLIMIT_CPU, 4 s here) and
    the traced probe then needs 1.5 s: what is left of the limit cannot cover a probe's CPU time,
    so a new child traces, with a new child's limit, and the trace comes back."""
    slow = f"""
import os as _os
import time as _time
_{LAST} = {LAST}

def _spin_until(seconds):
    while _time.process_time() < seconds:
        pass

def attention_scores(inputs):
    if _time.process_time() > 2.5:  # after the last grade probe: the follow-up
        _spin_until(_time.process_time() + 1.5)
    return torch.full((inputs.shape[0], inputs.shape[0]), float(_os.getpid()))

def {LAST}(*args, **kwargs):
    _spin_until(3.0)
    return _{LAST}(*args, **kwargs)
"""
    limits = dataclasses.replace(LIMITS, cpu_seconds=4, probe_seconds=4)
    grade_run, trace_run = graded_then_followed(
        submission_with(tmp_path, "slow", slow), in_order(), [SCORES], limits=limits
    )
    assert all(isinstance(result, dict) for result in grade_run.results.values()), grade_run.results
    assert isinstance(trace_run.results[SCORES], dict), trace_run.results[SCORES]
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) != graded_pid  # a new child


def test_release_frees_the_slot_and_close_frees_a_waiting_one(tmp_path):
    """After `release` the slot takes the next job; a pool closed while a slot still waits for
    what follows (nobody decided) stops at once rather than waiting forever."""
    load_all()
    probes = [SCORES]
    first, second = (read_submission(write_solutions(tmp_path / name, note=name)) for name in ("first", "second"))
    with SandboxPool(1, LIMITS, probes=probes) as pool:
        pool.submit(first, follow=True)
        pool.submit(second)
        names = []
        for run in pool.results():
            names.append(run.submission.name)
            pool.release(run)  # no-op for `second`, not a job to follow
        assert names == ["first", "second"]
        assert all(isinstance(result, dict) for result in run.results.values())
    started = time.monotonic()
    pool = SandboxPool(1, LIMITS, probes=probes)
    pool.submit(first, follow=True)
    (run,) = [next(pool.results())]
    assert isinstance(run.results[SCORES], dict)
    pool.close()
    assert time.monotonic() - started < 60


def test_a_follow_up_of_a_job_not_to_follow_is_a_job_of_its_own(tmp_path):
    load_all()
    submission = submission_with(tmp_path, "pid", PID_IN_SCORES)
    with SandboxPool(1, LIMITS, probes=[SCORES]) as pool:
        pool.submit(submission)
        runs = {}
        for run in pool.results():
            runs[run.mode] = run
            if run.mode == "grade":
                pool.follow_up(run, [SCORES], "trace", seconds=60)
    graded_pid = float(runs["grade"].results[SCORES]["book"].flatten()[0])
    trace = runs["trace"].results[SCORES]
    assert not isinstance(trace, ProbeError), trace
    assert pid_in_trace(trace["trace"]) != graded_pid
