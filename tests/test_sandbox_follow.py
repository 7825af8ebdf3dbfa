"""Jobs to follow up (`SandboxPool.submit(follow=True)`): a submission's failed probes are traced
in the child that graded it, which parks after its last probe, stopped, until the trusted side
says what follows. The follow-up must trace exactly what a trace job of its own traces, fall back
to a fresh child whenever the parked one cannot take it, and never let the parked child run."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grader.diagnosis.traces import parse_trace  # noqa: E402
from grader.intake.discovery import read_submission  # noqa: E402
from grader.probes import PROBES, load_all  # noqa: E402
from grader.records import ProbeError  # noqa: E402
from grader.sandbox.pool import Limits, SandboxPool  # noqa: E402
from tests.test_sandbox import solution_source, write_solutions  # noqa: E402

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


def graded_then_followed(submission, probes: list[str], traced: list[str], decide=None):
    """The grade run of `probes` (a job to follow) and the run of its follow-up tracing `traced`."""
    with SandboxPool(1, LIMITS, probes=probes) as pool:
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
    thread = PID_IN_SCORES + f"""
import threading as _threading
import time as _time
_{last} = {last}

def {last}(*args, **kwargs):
    _threading.Thread(target=_time.sleep, args=(20,), daemon=True).start()
    return _{last}(*args, **kwargs)
"""
    grade_run, trace_run = graded_then_followed(submission_with(tmp_path, "thread", thread), probes, [SCORES])
    assert all(isinstance(result, dict) for result in grade_run.results.values()), grade_run.results
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) != graded_pid


def test_a_follow_up_traces_what_a_trace_job_traces(tmp_path):
    """Module-level code and state the earlier probes left: the follow-up imports the student's
    modules afresh, so its trace is byte for byte a trace job's (a mask made once, on the first
    call, and kept in a module-level dict, is made and traced again)."""
    load_all()
    cached_mask = """
_MASKS = {}
_plain_weights = attention_weights

def attention_weights(inputs):
    n = inputs.shape[0]
    if n not in _MASKS:
        _MASKS[n] = torch.triu(torch.ones(n, n), diagonal=1)
    return _plain_weights(inputs) * (1 - 0 * _MASKS[n])
"""
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
    spin = PID_IN_SCORES + f"""
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
    spent = []

    def wait_and_measure(pool):
        before = descendants_cpu(os.getpid())
        time.sleep(2.0)
        spent.append(descendants_cpu(os.getpid()) - before)

    grade_run, trace_run = graded_then_followed(submission_with(tmp_path, "spin", spin), probes, [SCORES],
                                                wait_and_measure)
    assert all(isinstance(result, dict) for result in grade_run.results.values()), grade_run.results
    assert spent[0] < 0.5, spent  # the handler would have spent a second
    graded_pid = float(grade_run.results[SCORES]["book"].flatten()[0])
    assert pid_in_trace(trace_run.results[SCORES]["trace"]) == graded_pid  # it was parked, not replaced


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


def descendants_cpu(pid: int) -> float:
    """CPU seconds of the live descendants of `pid` (its workers, their job processes and children)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, stack = 0.0, [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as listed:
                    children = [int(child) for child in listed.read().split()]
            except OSError:
                continue
            for child in children:
                try:
                    with open(f"/proc/{child}/stat", "rb") as stat:
                        fields = stat.read().rsplit(b")", 1)[1].split()
                    total += (int(fields[11]) + int(fields[12])) / ticks
                except (OSError, ValueError, IndexError):
                    continue
                stack.append(child)
    return total

