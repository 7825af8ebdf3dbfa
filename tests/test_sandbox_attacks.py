"""The sandbox against attacks on what lasts between students and on its clocks, its memory in the
trusted process, its extension points (modes, flavours) and the notice of missing protections.
Each test runs its own small pool; the attacks are in tests/attacks/ (persist_*, deadline_*,
flood_*)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from grader.answer_key import KIT_CACHE
from grader.i18n import Catalog
from grader.intake.discovery import read_submission
from grader.probes import book_inputs, load_all
from grader.records import ProbeError
from grader.run import grade
from grader.sandbox import connection, exposure, mounts, slots
from grader.sandbox import pool as pool_module
from grader.sandbox.pool import Limits, SandboxPool
from tests.conftest import MODULES, solutions_as_submission
from tests.platforms import WITHOUT_NAMESPACES

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "attacks"
MODULE = "sec3_3_simple_attention"
PROBE = f"{MODULE}:attention_scores"
SECTION_PROBES = [
    f"{MODULE}:{name}"
    for name in (
        "attention_scores",
        "attention_weights",
        "context_vector_for_query",
        "context_vectors",
        "scores_for_query",
        "softmax_naive",
    )
]
INDEPENDENT = [f"{MODULE}:scores_for_query", f"{MODULE}:softmax_naive"]  # never call attention_scores
LIMITS = Limits(probe_seconds=3, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30)
NO_BUBBLEWRAP = mounts.Bubblewrap(installed=False, usable=False)


def attacked(tmp_path: Path, name: str, attack: str, module: str = MODULE, **fill: str):
    """A correct submission whose `module` (sec3_3's unless told) has `attack` appended (placeholders filled in)."""
    target = solutions_as_submission(tmp_path / name)
    text = (ATTACKS / attack).read_text()
    for key, value in fill.items():
        text = text.replace("{" + key + "}", value)
    module = target / f"{module}.py"
    module.write_text(module.read_text() + "\n" + text)
    return read_submission(target)


def run_all(pool: SandboxPool, submissions, probes=None) -> dict[str, dict]:
    for submission in submissions:
        pool.submit(submission, probes)
    return {run.submission.name: run.results for run in pool.results()}


# -- nothing persists between students ----------------------------------------------------------

OPEN_FOLDER = Path("/tmp/.attention-kit-open")
LEAK_FILES = [
    Path(p)
    for p in (
        "/tmp/attention-kit-leak",
        "/var/tmp/attention-kit-leak",
        "/dev/shm/attention-kit-leak",
        "/run/lock/attention-kit-leak",
        str(OPEN_FOLDER / "attention-kit-leak"),
    )
]


@pytest.mark.parametrize(
    "bubblewrap, view",
    [(True, False), (False, True), (False, False)],
    ids=["bubblewrap", "without-bubblewrap", "without-bubblewrap-or-mount-namespace"],
)
def test_nothing_one_student_leaves_reaches_the_next_in_the_same_worker(tmp_path, monkeypatch, bubblewrap, view):
    """Without bubblewrap, as root, the workers' own mount namespace gives children the same
    /tmp as bubblewrap (only the scratch folder is theirs) and read-only shared folders; where no
    mount namespace can be made either, what they leave in the shared folders is removed."""
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    if not view:
        monkeypatch.setattr(mounts, "private_view", lambda *args: "")
    for leftover in LEAK_FILES:
        leftover.unlink(missing_ok=True)
    OPEN_FOLDER.mkdir(exist_ok=True)  # like /tmp/.X11-unix: root's, anyone may write into it
    OPEN_FOLDER.chmod(0o1777)
    leave = attacked(tmp_path, "leave", "persist_state.py", PERSIST="leave")
    find = attacked(tmp_path, "find", "persist_state.py", PERSIST="find")
    with SandboxPool(1, LIMITS, probes=[PROBE]) as pool:  # one worker: the same slot, the same uid
        assert pool.use_bwrap == bubblewrap
        results = run_all(pool, [leave, find])
    report = results["leave"][PROBE]
    match = re.search(r"left=\[(.*)\] seen=\[(.*)\]", report.message)
    assert match, report
    left, seen = ({item.strip(" '") for item in group.split(",") if item.strip()} for group in match.groups())
    # the attack did leave all of this, and could see it from where it was
    assert {"sysv-shm", "sysv-sem", "sysv-msg", "posix-mqueue", "daemon", "file attention-kit-leak"} <= left
    assert left <= seen
    assert "keyring" not in left  # keyrings are out of reach
    shared = {f"file {path}" for path in LEAK_FILES}
    assert (
        not (left & shared)
        if bubblewrap or view
        else {"file /tmp/attention-kit-leak", f"file {OPEN_FOLDER}/attention-kit-leak"} <= left
    )
    found = results["find"][PROBE]
    assert isinstance(found, dict), found.message
    assert torch.allclose(found["book"], book_inputs() @ book_inputs().T)
    assert not [path for path in LEAK_FILES if path.exists()]
    shutil.rmtree(OPEN_FOLDER, ignore_errors=True)


@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "without-bubblewrap"])
def test_a_child_finds_nothing_of_an_earlier_student_in_the_memory_it_starts_with(tmp_path, monkeypatch, bubblewrap):
    """Children are forked from the warm worker: had the worker itself read the victim's job (its
    files, base64-encoded in a JSON line) or forwarded its results, the thief graded next by the
    same worker would find the victim's source in freed heap it inherited."""
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    padding = "".join(f"\n# padding {line}: " + "x" * 60 for line in range(3000))  # a larger job than the thief's
    victim = attacked(
        tmp_path, "victim", "persist_memory.py", PERSIST="victim", SECRET="VICTIM-SECRET-k3J9xQ" + padding
    )
    thief = attacked(tmp_path, "thief", "persist_memory.py", PERSIST="thief", SECRET="")
    assert "VICTIM-SECRET-k3J9xQ" in victim.sources[MODULE] and "VICTIM-SECRET-k3J9xQ" not in thief.sources[MODULE]
    with SandboxPool(1, LIMITS, probes=[PROBE]) as pool:  # one worker: the thief runs where the victim ran
        for submission in (victim, thief, victim, thief):
            pool.submit(submission)
        runs = [run.results[PROBE] for run in pool.results() if run.submission.name == "thief"]
    assert len(runs) == 2
    for found in runs:
        assert isinstance(found, dict), found.message
        assert torch.allclose(found["book"], book_inputs() @ book_inputs().T)


# -- fairness and the answer key, with and without bubblewrap ------------------------------------


@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "without-bubblewrap"])
def test_a_correct_submission_importing_any_standard_module_earns_full_marks(tmp_path, monkeypatch, bubblewrap):
    """The interpreter may live in a folder the sandbox's uid cannot pass (pyenv under /root,
    mode 0700): modules the warm worker did not import must still be found."""
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    fair = attacked(tmp_path, "fair", "fair_stdlib.py")
    with SandboxPool(1, LIMITS) as pool:
        assert pool.use_bwrap == bubblewrap
        results = run_all(pool, [fair], SECTION_PROBES)["fair"]
    for probe in SECTION_PROBES:
        assert isinstance(results[probe], dict), (probe, results[probe])
    assert torch.allclose(results[PROBE]["book"], book_inputs() @ book_inputs().T)


@pytest.mark.skipif(os.getuid() != 0, reason="uid separation (and so any hiding) needs root")
@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "without-bubblewrap"])
def test_the_answer_key_the_class_and_the_reports_are_out_of_reach(tmp_path, monkeypatch, bubblewrap):
    """As `grade` runs the pool: hiding the class folder and the reports. Without bubblewrap the
    workers' own mount namespace hides them, the kit's checkout and its git folder."""
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    klass, out = tmp_path / "class", tmp_path / "reports"
    solutions_as_submission(klass / "classmate")
    (out / ".grader-cache").mkdir(parents=True)
    (out / ".grader-cache" / "answer-key-test.bin").write_bytes(b"the reference's outputs")
    KIT_CACHE.mkdir(mode=0o700, exist_ok=True)  # where every run finds the reference's outputs
    git = mounts.git_folders(ROOT)[-1]
    paths = {"REPO": str(ROOT), "CLASS": str(klass), "OUT": str(out), "GIT": str(git), "GRADER": str(os.getpid())}
    thief = attacked(klass, "thief", "reach_answer_key.py", **paths)
    assert os.access(ROOT / "solutions", os.R_OK)  # reachable here, in the grader
    with SandboxPool(1, LIMITS, probes=[PROBE], hide=[klass, out]) as pool:
        assert pool.use_bwrap == bubblewrap
        found = run_all(pool, [thief])["thief"][PROBE]
    assert isinstance(found, dict), found.message
    assert torch.allclose(found["book"], book_inputs() @ book_inputs().T)


def test_of_sys_a_child_sees_the_huge_page_settings_alone_read_only_and_its_malloc_uses_them(tmp_path):
    """glibc reads /sys/kernel/mm/transparent_hugepage to decide whether its malloc may ask for huge
    pages (GLIBC_TUNABLES, sandbox.connection.environment): the sandbox binds that folder read-only,
    and nothing else of /sys (the worker reads it, as root; a child inherits what its malloc read).
    Where the kernel offers huge pages on request, a child's large
    tensors are mapped in them (without the settings, every child faulted them in 4 kB at a time)."""
    settings = Path("/sys/kernel/mm/transparent_hugepage")
    prober = attacked(tmp_path, "prober", "reach_sys.py")
    with SandboxPool(1, LIMITS, probes=[PROBE]) as pool:
        assert pool.use_bwrap  # without bubblewrap the workers see the host's /sys (their own mount namespace)
        found = run_all(pool, [prober])["prober"][PROBE]
    assert isinstance(found, ProbeError) and found.exc_type == "RuntimeError", found
    seen = json.loads(found.message)
    outside = [path for path in seen["shown"] if not (path + "/").startswith(f"{settings}/")]
    assert set(outside) <= {"/sys/kernel", "/sys/kernel/mm"}, outside  # the folders on the way (root's, 0700)
    assert not seen["written"]
    assert all("ro" in options.split(",") for options in seen["mount_options"]), seen
    assert len(seen["mount_options"]) == settings.exists(), seen
    offered = settings.exists() and re.search(r"\[(always|madvise)\]", (settings / "enabled").read_text())
    assert (seen["huge_page_areas"] > 0) == bool(offered), seen


@pytest.mark.skipif(not WITHOUT_NAMESPACES, reason="needs root and setpriv")
def test_root_without_the_right_to_make_namespaces_still_grades_correct_code(tmp_path):
    """As in a container that cannot run bubblewrap (root without CAP_SYS_ADMIN): no mount or IPC
    namespace can be made. The child's fallback for IPC (a user namespace) maps root alone, after
    which it could not become the slot's uid: every probe of every student crashed."""
    fair = solutions_as_submission(tmp_path / "fair")
    module = fair / f"{MODULE}.py"  # the standard modules that issue asks for; the worker preloads them
    module.write_text(
        module.read_text() + "\nimport collections, ctypes.util, dataclasses, decimal, fractions, functools"
        ", itertools, math, statistics, typing\n"
    )
    script = textwrap.dedent(f"""
        from grader.intake.discovery import read_submission
        from grader.sandbox import mounts
        from grader.sandbox.pool import Limits, SandboxPool
        mounts.bubblewrap = lambda: mounts.Bubblewrap(installed=False, usable=False)
        with SandboxPool(1, Limits(probe_seconds=3, probe_wall_seconds=30), probes={SECTION_PROBES!r}) as pool:
            pool.submit(read_submission(__import__("pathlib").Path({str(fair)!r})))
            results = next(pool.results()).results
        print(sorted(name for name, value in results.items() if not isinstance(value, dict)))
        """)
    done = subprocess.run(
        [*WITHOUT_NAMESPACES, sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # all correct: the child became the slot's uid, and found what the warm worker preloaded
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


@pytest.mark.skipif(os.getuid() != 0, reason="removing another uid's IPC objects needs root")
def test_ipc_objects_of_the_slot_uid_are_removed_after_a_child(tmp_path):
    """Where a child cannot have an IPC namespace of its own (root without CAP_SYS_ADMIN), its
    System V objects would wait in the worker's namespace for the next student of the slot."""
    import ctypes

    from grader.sandbox import cleanup

    libc = ctypes.CDLL(None, use_errno=True)
    uid, key = 54322, 0x4B1702
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            made = [
                libc.shmget(key, 4096, 0o1000 | 0o600),
                libc.semget(key, 1, 0o1000 | 0o600),
                libc.msgget(key, 0o1000 | 0o600),
            ]
            os.write(ready_w, b"1" if min(made) >= 0 else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(ready_r, 1) == b"1"

    def owned() -> list[str]:
        found = []
        for table in ("shm", "sem", "msg"):
            with open(f"/proc/sysvipc/{table}") as rows:
                header, *lines = rows.read().splitlines()
            found += [table for line in lines if dict(zip(header.split(), line.split()))["uid"] == str(uid)]
        return found

    assert owned() == ["shm", "sem", "msg"]
    cleanup.clear_ipc(uid)
    assert owned() == []


# -- deadlines ----------------------------------------------------------------------------------


def test_no_frame_a_child_writes_moves_its_deadline(tmp_path):
    """A probe's clock starts once, when the probe starts; the other probes are graded as usual
    (had the attack moved its clock, it would have run until the submission's deadline, and every
    later probe would have timed out)."""
    limits = Limits(probe_seconds=1, probe_wall_seconds=2, submission_seconds=600, cpu_seconds=60)
    kinds = ["restart", "next", "imports", "imports-busy"]
    submissions = [attacked(tmp_path, kind, "deadline_frames.py", FRAMES=kind) for kind in kinds]
    with SandboxPool(2, limits) as pool:
        results = run_all(pool, submissions, SECTION_PROBES)
    # sleeping between notices: the wall-clock backstop; notices as fast as it can: too many of them
    expected = {"restart": "crash", "next": "crash", "imports": "timeout", "imports-busy": "crash"}
    for kind in kinds:
        error = results[kind][PROBE]
        assert isinstance(error, ProbeError) and error.kind == expected[kind], (kind, error)
        for probe in INDEPENDENT:
            assert isinstance(results[kind][probe], dict), (kind, probe, results[kind][probe])


def test_a_module_that_sleeps_uses_up_its_own_time_only(tmp_path):
    """Sleeping costs no CPU time: each probe of the sleeping module runs into its wall-clock
    backstop. Those of one module share `module_seconds`; once used up, the module's other probes
    are not run ("module-timeout", naming the module and its time). The six sleeping probes alone
    would have taken longer than the submission's cap, and the correct modules after them timed
    out too; now they have their own time."""
    limits = Limits(probe_seconds=1, probe_wall_seconds=4, module_seconds=6, submission_seconds=20, cpu_seconds=60)
    submission = attacked(tmp_path, "sleeper", "deadline_sleep_everywhere.py")
    with SandboxPool(1, limits, probes=list(load_all())) as pool:
        (results,) = run_all(pool, [submission]).values()
    sleeping = {name: error for name, error in results.items() if name.startswith(MODULE + ":")}
    assert all(isinstance(error, ProbeError) and error.kind == "timeout" for error in sleeping.values()), sleeping
    keys = sorted(error.key for error in sleeping.values())
    assert keys.count("sandbox.timeout") == 2, keys  # 4 s, then the 2 s its module had left
    assert keys.count("sandbox.module-timeout") == len(SECTION_PROBES) - 2, keys
    skipped = next(error for error in sleeping.values() if error.key == "sandbox.module-timeout")
    assert skipped.params == {"module": MODULE, "seconds": 6}
    text = Catalog("en").t(skipped.key, **skipped.params)
    assert MODULE in text and "6 s" in text  # the module by name: it may be a notebook's code
    others = {name: result for name, result in results.items() if not name.startswith(MODULE + ":")}
    assert len(others) > 40 and all(isinstance(result, dict) for result in others.values()), {
        name: result for name, result in others.items() if not isinstance(result, dict)
    }


def test_a_forged_result_does_not_stop_its_modules_clock(tmp_path):
    """context_vectors sends a result of its own for its probe, then sleeps: the worker takes the
    result (the child's own business) but the sleep after it, until the probe's clock ends (the
    rest of the module's 3 s), still counts against the module. The module's allowance is used
    up, so its probes after it are not run; they ran, on time no module was charged, before."""
    limits = Limits(probe_seconds=1, probe_wall_seconds=3, module_seconds=3, submission_seconds=60, cpu_seconds=60)
    submission = attacked(tmp_path, "forger", "deadline_forged_result.py")
    with SandboxPool(1, limits) as pool:
        (results,) = run_all(pool, [submission], SECTION_PROBES).values()
    after = SECTION_PROBES[SECTION_PROBES.index(f"{MODULE}:context_vectors") + 1 :]
    assert after and all(
        isinstance(results[name], ProbeError) and results[name].key == "sandbox.module-timeout" for name in after
    ), {name: results[name] for name in after}


def test_a_module_whose_allowance_ends_during_its_import_is_still_imported_by_the_others(tmp_path):
    """sec3_5 takes 3 s to import and its functions sleep: its first probe times out (10 s), the
    second, in a new child, has at most 2 s of the module's allowance left and times out while
    importing it again. sec3_5 is not known to hang on import for that: sec3_6 (which imports
    its CausalAttention) and the exercises (which import sec3_6) are correct and import it on
    their own time. They lost every point to "import.poisoned" before."""
    limits = Limits(probe_seconds=1, probe_wall_seconds=10, module_seconds=12, submission_seconds=120, cpu_seconds=60)
    submission = attacked(tmp_path, "slow-import", "deadline_slow_import.py", module="sec3_5_causal_attention")
    probes = [name for name in load_all() if name.startswith(("sec3_5", "sec3_6", "exercise3_2", "exercise3_3"))]
    with SandboxPool(1, limits, probes=probes) as pool:
        (results,) = run_all(pool, [submission]).values()
    own = [results[name] for name in probes if name.startswith("sec3_5")]
    assert all(isinstance(error, ProbeError) and error.kind == "timeout" for error in own), own
    # the one stopped while importing says so, in the student's terms (it was "took too long")
    (stopped,) = [error for error in own if error.key == "sandbox.import-timeout"]
    for lang in ("en", "zh"):
        assert "sec3_5_causal_attention" in Catalog(lang).t(stopped.key, **stopped.params)
    others = {name: results[name] for name in probes if not name.startswith("sec3_5")}
    assert all(isinstance(result, dict) for result in others.values()), {
        name: result for name, result in others.items() if not isinstance(result, dict)
    }


def test_a_submissions_trace_job_gets_only_what_its_grade_job_left(tmp_path, monkeypatch):
    """Six modules sleep until their allowance is used up (2 s each, the submission's 12 s in
    all), and exercise 3.1's tests fail fast with values of the student's own: such probes are
    traced in a second job, which used to get a whole submission's time again (a submission that
    sleeps in every module took twice the cap, past PrairieLearn's timeout). Nothing is left for
    it: no trace job."""
    limits = Limits(probe_seconds=1, probe_wall_seconds=2, module_seconds=2, submission_seconds=12, cpu_seconds=60)
    folder = solutions_as_submission(tmp_path / "sleeper")
    for module in MODULES:
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + "\n" + (ATTACKS / "deadline_sleep_then_wrong.py").read_text())
    jobs = []
    run = connection.WorkerConnection.run

    def recorded(self, job, *args):
        jobs.append((job["mode"], job["limits"]["submission_seconds"]))
        return run(self, job, *args)

    monkeypatch.setattr(connection.WorkerConnection, "run", recorded)
    grade(folder, tmp_path / "out", jobs=1, force=True, limits=limits)
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    tests = {test["id"]: test for test in document["tests"]}
    exercise = [test for name, test in tests.items() if name.startswith("exercise3_1")]
    assert any(test["status"] == "failed" for test in exercise), [(test["id"], test["status"]) for test in exercise]
    assert [mode for mode, _ in jobs] == ["grade"], jobs
    assert sum(seconds for _, seconds in jobs) <= limits.submission_seconds


def test_the_pool_keeps_one_deadline_for_a_job_across_retries(monkeypatch):
    """Workers that die on every attempt: each attempt gets the job's deadline, set once (moved
    only by the time a replacement worker takes to start, here next to nothing), and what is left
    of the submission's time, never a fresh allowance."""
    seen = []

    class Dying:
        pid = 0

        def __init__(self, *args, **kwargs):
            pass

        def alive(self):
            return True

        def run(self, job, results, budget, deadline, payload_bytes, digests=None):
            seen.append((deadline, job["limits"]["submission_seconds"]))
            return False

        def kill(self):
            pass

        stop = kill

    monkeypatch.setattr(pool_module, "WorkerConnection", Dying)
    with SandboxPool(1, Limits(submission_seconds=50)) as pool:
        pool.submit(read_submission(solutions_as_submission(Path(pool.staging) / "s")), [PROBE])
        (run,) = list(pool.results())
    assert len(seen) == pool_module.ATTEMPTS
    deadlines = [deadline for deadline, _ in seen]
    assert deadlines == sorted(deadlines) and deadlines[-1] - deadlines[0] < 50  # no fresh 50 s
    assert all(0 < seconds <= 50 for _, seconds in seen)
    assert [seconds for _, seconds in seen] == sorted((seconds for _, seconds in seen), reverse=True)
    assert run.results[PROBE].key == "sandbox.worker-died"


# -- messages name the student's file ---------------------------------------------------------


def test_messages_and_frames_name_the_students_file_not_the_scratch_folder(tmp_path):
    target = solutions_as_submission(tmp_path / "paths")
    module = target / f"{MODULE}.py"
    module.write_text(
        module.read_text()
        + textwrap.dedent("""
        import os


        def attention_scores(inputs):
            raise FileNotFoundError(os.path.abspath("data.txt") + " in " + __file__ + " under " + os.getcwd())


        def softmax_naive(x):
            from sec3_4_self_attention import NoSuchThing
        """)
    )
    with SandboxPool(1, LIMITS) as pool:
        results = run_all(pool, [read_submission(target)], [PROBE, f"{MODULE}:softmax_naive"])["paths"]
    error = results[PROBE]
    assert error.message == "data.txt in sec3_3_simple_attention.py under ."
    assert error.location.file == "sec3_3_simple_attention.py" and error.location.line > 0
    imported = results[f"{MODULE}:softmax_naive"]
    assert "(sec3_4_self_attention.py)" in imported.message and "/tmp" not in imported.message


# -- memory of the trusted process ------------------------------------------------------------

MEMORY_SCRIPT = """
import json, resource, sys
from pathlib import Path
from grader.run import grade

peaks, messages = {}, set()
for kind in ("honest", "flood"):
    summary = grade(Path(sys.argv[1]) / kind, Path(sys.argv[2]) / kind, jobs=2, force=True)
    peaks[kind] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if kind == "flood":
        messages = {t.message for r in summary.results for t in r.tests if t.status != "passed"}
print(json.dumps({"peaks": peaks, "messages": sorted(messages)}))
print(json.dumps(sorted(messages)), file=sys.stderr)
"""


def test_a_class_flooding_every_probe_keeps_the_trusted_process_near_its_baseline(tmp_path):
    """Every probe of every flooding student sends a payload just under the per-result limit, in
    the shapes that cost most per byte. Before the byte budget, two such students took the grading
    process from 320 MB to 1.6 GB; now six take it to about 40 MB more than six honest ones."""
    flood = (ATTACKS / "flood_results.py").read_text()
    for kind in ("honest", "flood"):
        for index in range(6):
            student = solutions_as_submission(tmp_path / "classes" / kind / f"s{index}")
            for module in MODULES:
                path = student / f"{module}.py"
                path.write_text(path.read_text() + (f"\n{flood}" if kind == "flood" else "") + f"\n# {index}\n")
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(tmp_path / "classes"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout.strip().splitlines()[-1])
    peaks = document["peaks"]
    over_budget = Catalog("en").t("sandbox.over-budget", limit_mb=8)
    assert over_budget in document["messages"], done.stderr[-3000:]  # the flood did hit the budget
    grader_blamed = Catalog("en").t("internal.suite-error", type="", text="").split(").")[-1].strip()
    assert not [m for m in document["messages"] if grader_blamed in m]  # forged results are the student's
    assert peaks["flood"] - peaks["honest"] < 300 * 1024**2, peaks


# -- extension points: modes and flavours -----------------------------------------------------


class PoolWithTestExtensions(SandboxPool):
    """A pool whose staged sandbox code registers one more mode and one more flavour, the way
    another track or a second pass would."""

    def _stage_code(self) -> None:
        super()._stage_code()
        sandbox = self.staging / "kit" / "grader" / "sandbox"
        with open(sandbox / "driver.py", "a") as driver:
            driver.write(
                '\nMODES["echo"] = lambda probe, ns, directory: '
                '{"ok": {"probe": probe.name, "flavour": os.environ.get("KIT_TEST_FLAVOUR", "")}}\n'
            )
        with open(sandbox / "warmup.py", "a") as warmup:
            warmup.write(
                "\ndef _test_flavour():\n    import os\n    torch_flavour()\n"
                '    os.environ["KIT_TEST_FLAVOUR"] = "test"\n\n\nFLAVOURS["test"] = _test_flavour\n'
            )


def test_a_submission_runs_in_several_modes_and_flavours_warm_up_the_workers(tmp_path):
    submission = read_submission(solutions_as_submission(tmp_path / "alice"))
    with PoolWithTestExtensions(1, LIMITS, flavour="test") as pool:
        ids = [pool.submit(submission, [PROBE], mode=mode) for mode in ("echo", "grade", "missing-mode")]
        runs = {run.job: run for run in pool.results()}
    assert len(set(ids)) == 3 and set(runs) == set(ids)
    echo, grade, missing = (runs[i] for i in ids)
    assert (echo.mode, grade.mode, missing.mode) == ("echo", "grade", "missing-mode")
    assert echo.results[PROBE] == {"probe": PROBE, "flavour": "test"}
    assert torch.is_tensor(grade.results[PROBE]["book"])
    assert isinstance(missing.results[PROBE], ProbeError)  # a grader bug fails loudly, never hangs


def test_an_unknown_flavour_fails_every_probe_instead_of_hanging(tmp_path):
    submission = read_submission(solutions_as_submission(tmp_path / "alice"))
    with SandboxPool(1, LIMITS, flavour="no-such-framework") as pool:
        results = run_all(pool, [submission], [PROBE])["alice"]
    assert results[PROBE].key == "sandbox.worker-died"


# -- which protection is missing, precisely ---------------------------------------------------


def fake_bwrap(folder: Path, stderr: str, status: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' {json.dumps(stderr)} >&2\nexit {status}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_bubblewrap_installed_but_unusable_is_not_called_not_installed(tmp_path, monkeypatch):
    reason = (
        "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces. On e.g. debian this can be enabled with "
        "'sysctl kernel.unprivileged_userns_clone=1'."
    )
    fake_bwrap(tmp_path / "bin", reason + "\nsecond line", 1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    status = mounts.bubblewrap()
    assert (status.installed, status.usable) == (True, False)
    assert status.reason.startswith("bwrap: No permissions to creating new namespace")
    assert len(status.reason) <= mounts.MAX_REASON and "second line" not in status.reason
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert mounts.bubblewrap() == mounts.Bubblewrap(installed=False, usable=False)


@pytest.mark.parametrize(
    "status, kind, detail",
    [
        (mounts.Bubblewrap(installed=False, usable=False), "sandbox.no-bubblewrap", "bwrap"),
        (
            mounts.Bubblewrap(installed=True, usable=False, reason="bwrap: setting up uid map: Permission denied"),
            "sandbox.bubblewrap-unusable",
            "bwrap: setting up uid map: Permission denied",
        ),
    ],
)
def test_the_notice_says_which_protection_is_missing(monkeypatch, status, kind, detail):
    monkeypatch.setattr(mounts, "bubblewrap", lambda: status)
    with SandboxPool(1, LIMITS, probes=[]) as pool:
        notes = pool.protections()
    assert [(n.kind, n.detail) for n in notes if "bubblewrap" in n.kind] == [(kind, detail)]
    for lang in ("en", "zh"):
        text = Catalog(lang).t(f"integrity.{kind}", detail=detail)
        assert text != f"integrity.{kind}"
        if kind == "sandbox.bubblewrap-unusable":
            assert detail in text and text != Catalog(lang).t("integrity.sandbox.no-bubblewrap")


@pytest.mark.parametrize("usable", [True, False], ids=["bubblewrap", "no-bubblewrap"])
@pytest.mark.parametrize("readable", [None, "solutions/sec3_5_causal_attention.py"])
@pytest.mark.parametrize("sys_admin", [True, False], ids=["mount-namespace", "no-mount-namespace"])
def test_an_answer_key_readable_by_the_childs_uid_is_named(monkeypatch, usable, readable, sys_admin):
    """Without bubblewrap or a mount namespace (a container without CAP_SYS_ADMIN) a root grader's
    children run under their own uid: the kit's file permissions are then all that hides the answer
    key, and the notice says when they do not."""
    monkeypatch.setattr(mounts, "has_sys_admin", lambda: sys_admin)
    monkeypatch.setattr(
        mounts,
        "bubblewrap",
        lambda: mounts.Bubblewrap(installed=True, usable=usable, reason="" if usable else "bwrap: denied"),
    )
    monkeypatch.setattr(exposure, "readable_by_others", lambda root: readable)
    monkeypatch.setattr(exposure, "_site_packages", lambda: [])
    with SandboxPool(1, LIMITS, probes=[]) as pool:
        notes = [(n.kind, n.detail) for n in pool.protections() if n.kind.startswith("deploy.")]
        named = not usable and readable is not None and pool.is_root and not sys_admin
    assert notes == ([("deploy.kit-readable", readable)] if named else [])


def test_a_child_without_root_still_gets_an_ipc_namespace_of_its_own():
    """Where the grader is not root (no unshare of IPC alone), the child enters a user namespace
    that maps its own uid to itself, with a new IPC namespace: what it creates is invisible
    outside and dies with it, and its files keep their owner."""
    import ctypes

    from grader.sandbox import child

    key, uid = 0x4B1701, 54321
    libc = ctypes.CDLL(None, use_errno=True)
    report_r, report_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.write(report_w, b"{")  # a child that dies in isolate_ipc leaves a report that is no JSON
            isolated = child.isolate_ipc()
            created = libc.shmget(key, 4096, 0o1000 | 0o600)
            os.write(report_w, json.dumps({"isolated": isolated, "uid": os.getuid(), "created": created})[1:].encode())
            os.close(report_w)
            os.read(done_r, 1)  # alive (and its shared memory with it) until the parent has looked
        finally:
            os._exit(0)
    os.close(report_w)
    try:
        with os.fdopen(report_r, "rb") as report_file:
            report = json.loads(report_file.read())
        with open("/proc/sysvipc/shm") as table:
            keys = {int(line.split()[0]) for line in table.read().splitlines()[1:]}
    finally:
        os.write(done_w, b"x")
        os.waitpid(pid, 0)
        for fd in (done_r, done_w):
            os.close(fd)
    if not report["isolated"]:
        pytest.skip("this kernel allows no user namespaces")
    assert report["uid"] == uid and report["created"] >= 0
    assert key not in keys


def test_two_grading_runs_at_once_never_share_a_uid_range(tmp_path):
    """Slot uids used to be chosen by pid modulo 2000: two runs could share them, and one run's
    clean-up would kill the other's children. A range is now held with a lock while a run lives."""
    first = slots.reserve_uid_range(7, tmp_path)
    second = slots.reserve_uid_range(7, tmp_path)
    assert first == 7 and second == 8
    script = (
        "import sys; from pathlib import Path; from grader.sandbox.slots import reserve_uid_range; "
        "print(reserve_uid_range(7, Path(sys.argv[1])))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert int(other.stdout) == 9  # another process skips the ranges this one holds


def test_killing_waits_for_no_dying_process_and_misses_no_new_one(monkeypatch):
    """A killed torch process takes milliseconds to tear its memory down before it is a zombie:
    the kill passes do not spin over it meanwhile (a pass that finds only processes already killed
    is the last), and a process forked before its parent was killed is found by the next pass."""
    from grader.sandbox import cleanup

    table = {"100": "R"}  # pid -> state; 100 stays alive ("R") however often it is killed
    listings, killed = [], []

    def listdir(path):
        listings.append(path)
        return list(table) + ["self"]

    def kill(pid, signum):
        killed.append(pid)
        if pid == 100 and "101" not in table:
            table["101"] = "R"  # forked just before the kill reached it

    monkeypatch.setattr(cleanup.os, "listdir", listdir)
    monkeypatch.setattr(cleanup.os, "kill", kill)
    monkeypatch.setattr(cleanup, "_is_zombie", lambda entry: table[entry] == "Z")
    cleanup._kill_until_none(lambda entry: True)
    assert sorted(set(killed)) == [100, 101] and len(listings) == 3


def _stat_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_a_process_whose_main_thread_ended_is_killed_and_reaped(monkeypatch):
    """A process may end its main thread alone (SYS_exit): its leader is then a zombie ("Z" in
    /proc/<pid>/stat) while its other threads run on, fork and signal. It is not dead: the kill
    passes kill it, and it is reaped."""
    from grader.sandbox import cleanup

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            import ctypes
            import threading
            import time

            os.close(read_fd)
            threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)], daemon=True).start()
            os.write(write_fd, b"x")
            ctypes.CDLL(None).syscall(60 if os.uname().machine == "x86_64" else 93, 0)  # the main thread only
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        assert os.read(read_fd, 1) == b"x"
        while _stat_state(pid) != "Z":  # the main thread has ended; another one lives on
            os.sched_yield()
        assert len(os.listdir(f"/proc/{pid}/task")) == 2
        killed = []
        kill = os.kill
        monkeypatch.setattr(cleanup.os, "kill", lambda target, signum: killed.append(target) or kill(target, signum))
        cleanup._kill_until_none(lambda entry: int(entry) == pid)
        monkeypatch.undo()
        assert killed == [pid]
        assert os.waitpid(pid, 0)[0] == pid  # killed: every thread ends, and it is reaped
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "without-bubblewrap"])
def test_a_process_left_with_its_main_thread_ended_never_reaches_the_next_student(tmp_path, monkeypatch, bubblewrap):
    """A double-forked process in a session of its own whose main thread ended alone looks like a
    zombie; it is killed with the child's family, not left to run under the next student's child."""
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    leave = attacked(tmp_path, "leave", "persist_leaderless_process.py", PERSIST="leave")
    find = attacked(tmp_path, "find", "persist_leaderless_process.py", PERSIST="find")
    with SandboxPool(1, LIMITS, probes=[PROBE]) as pool:  # one worker: the same slot, the same uid
        results = run_all(pool, [leave, find])
    assert results["leave"][PROBE].message == "left a leaderless process"
    found = results["find"][PROBE]
    assert isinstance(found, dict), found.message
    assert torch.allclose(found["book"], book_inputs() @ book_inputs().T)
