"""The sandbox against hostile submissions (tests/attacks/), crashing workers, missing protections,
and the runner's resume-from-cache. One `grade()` call grades the whole hostile class."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grader.answer_key import KIT_CACHE
from grader.i18n import Catalog
from grader.intake.discovery import read_submission
from grader.probes import PROBES, load_all
from grader.records import MODULES
from grader.run import CACHE_DIR, grade, grading
from grader.sandbox import codec, mounts, slots
from grader.sandbox.pool import Limits, SandboxPool, decode

ATTACKS = ROOT / "tests" / "attacks"
# Probes are timed in CPU seconds (their wall-clock backstop is ten times longer), so a loaded
# machine never turns a correct probe into a timeout. 512 MiB of memory on top of the worker's:
# the memory bomb's first 1 GiB request can never fit, so it fails at once, touching nothing.
LIMITS = Limits(
    probe_seconds=3, probe_wall_seconds=30, submission_seconds=60, cpu_seconds=15, memory_bytes=512 * 1024**2
)
MODULE = "sec3_3_simple_attention"
SECTION_33 = [
    f"{MODULE}::{name}"
    for name in (
        "test_attention_scores_for_query",
        "test_softmax_naive",
        "test_context_vector_for_query",
        "test_attention_scores",
        "test_attention_weights",
        "test_context_vectors",
    )
]
CHEATS = sorted(p.stem for p in ATTACKS.glob("cheat_*.py")) + ["cheat_conftest"]
LIMIT_CASES = {  # attack -> (the test it breaks, the statuses that test may end in)
    "limit_infinite_loop": ("test_softmax_naive", {"timeout"}),
    "limit_exit_mid_call": ("test_attention_weights", {"error"}),
    "limit_memory_bomb": ("test_attention_scores", {"resource"}),
    "limit_fork_bomb": ("test_context_vector_for_query", {"timeout", "resource"}),
    "limit_huge_file": ("test_context_vectors", {"resource"}),
    "limit_garbage_pipe": ("test_attention_scores_for_query", {"error"}),
    "limit_huge_output": ("test_attention_scores", {"resource"}),
}


def solution_source(module: str) -> str:
    source = (ROOT / "solutions" / f"{module}.py").read_text()
    return re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M)


def write_solutions(target: Path, note: str = "") -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        (target / f"{module}.py").write_text(solution_source(module) + (f"\n# {note}\n" if note else ""))
    return target


def slot_processes() -> list[int]:
    """Processes running under one of this process's slot uids (other grading runs on the machine
    have their own)."""
    low = slots.uid_base()
    high = low + 16
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if low <= os.stat(f"/proc/{entry}").st_uid < high:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def outcomes_by_id(document: dict) -> dict[str, dict]:
    return {t["id"]: t for t in document["tests"]}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("sandbox")
    cls, out = base / "class", base / "reports"
    clean_cls, clean_out = base / "clean", base / "clean-reports"
    canary = ROOT / f".sandbox-canary-{os.getpid()}"
    canary.write_text("untouched\n")
    values = {"{REPO}": str(ROOT), "{CLASS}": str(cls), "{OUT}": str(out), "{CANARY}": str(canary)}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    for target in (cls, clean_cls):
        write_solutions(target / "victim")
        (target / "victim-stub").mkdir(parents=True)
        for module in MODULES:
            shutil.copy(ROOT / "grader" / "exercises" / f"{module}.py", target / "victim-stub" / f"{module}.py")
    wrong = (ATTACKS / "_wrong_unless_cheat.py").read_text()
    for attack in ATTACKS.glob("cheat_*.py"):
        write_solutions(cls / attack.stem)
        (cls / attack.stem / f"{MODULE}.py").write_text(fill(attack.read_text()) + wrong)
    student = cls / "cheat_conftest"
    write_solutions(student)
    (student / f"{MODULE}.py").write_text((ATTACKS / "cheat_conftest" / f"{MODULE}.py").read_text() + wrong)
    (student / "conftest.py").write_text((ATTACKS / "cheat_conftest" / "conftest.py.txt").read_text())
    (student / "pytest.ini").write_text((ATTACKS / "cheat_conftest" / "pytest.ini.txt").read_text())
    for attack in ATTACKS.glob("limit_*.py"):
        write_solutions(cls / attack.stem)
        (cls / attack.stem / f"{MODULE}.py").write_text(solution_source(MODULE) + "\n" + fill(attack.read_text()))
    victim_source = (cls / "victim" / f"{MODULE}.py").read_bytes()
    try:
        collector = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
        started = time.perf_counter()
        summary = grade(cls, out, jobs=2, limits=LIMITS, force=True)
        seconds = time.perf_counter() - started
        collector_after = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
        leftover = slot_processes()
        clean = grade(clean_cls, clean_out, jobs=2, limits=LIMITS, force=True)
        yield {
            "collector": (collector, collector_after),
            "summary": summary,
            "clean": clean,
            "out": out,
            "clean_out": clean_out,
            "base": base,
            "docs": {
                r.submission: json.loads((out / r.submission / "results.json").read_text()) for r in summary.results
            },
            "clean_docs": {
                r.submission: json.loads((clean_out / r.submission / "results.json").read_text()) for r in clean.results
            },
            "canary": canary.read_text(),
            "victim_source": victim_source,
            "class": cls,
            "leftover": leftover,
            "seconds": seconds,
        }
    finally:
        canary.unlink(missing_ok=True)


def test_every_student_has_a_complete_result(hostile):
    docs = hostile["docs"]
    assert set(docs) == {"victim", "victim-stub", *CHEATS, *LIMIT_CASES}
    expected_ids = set(outcomes_by_id(hostile["docs"]["victim"]))
    assert len(expected_ids) >= len(SECTION_33)
    for name, document in docs.items():
        assert set(outcomes_by_id(document)) == expected_ids, name


def test_a_class_run_leaves_the_garbage_collector_as_it_found_it(hostile):
    """A run of eight submissions or more freezes what lives for the whole run and collects young
    objects less often (grader.run.grading); `grade` is also called in-process (nbgrader's
    autograde, the tests): a caller that froze nothing finds its collector's thresholds, nothing
    frozen and the collector enabled, as they were."""
    before, after = hostile["collector"]
    assert len(hostile["docs"]) >= grading.FREEZE_FROM
    assert after == before


def test_a_run_leaves_what_its_caller_froze_frozen(tmp_path, monkeypatch):
    """A caller that froze objects of its own (gc.freeze) finds them frozen after a run: the run
    freezes (and later unfreezes) only when nothing is frozen."""
    monkeypatch.setattr(grading, "FREEZE_FROM", 1)  # one submission is enough to run as a class would
    callers = [{"kept": []}]
    gc.freeze()
    try:
        thresholds = gc.get_threshold()
        grade(write_solutions(tmp_path / "alice"), tmp_path / "out", jobs=1, force=True)
        assert gc.get_threshold() == thresholds
        assert gc.get_freeze_count() > 0
        assert not any(tracked is callers for tracked in gc.get_objects())  # frozen: in no generation
    finally:
        gc.unfreeze()
    assert any(tracked is callers for tracked in gc.get_objects())


@pytest.mark.parametrize("attack", CHEATS)
def test_cheating_earns_nothing(hostile, attack):
    tests = outcomes_by_id(hostile["docs"][attack])
    victim = outcomes_by_id(hostile["docs"]["victim"])
    for test_id in SECTION_33:
        assert victim[test_id]["status"] == "passed"
        assert tests[test_id]["status"] != "passed", (attack, test_id, tests[test_id]["message"])
        assert tests[test_id]["points"] == 0
    # the rest of the submission is correct and is graded as such
    for test_id, outcome in victim.items():
        if not test_id.startswith(MODULE + "::") and "blocked_by" not in (tests[test_id].get("blocked_by") or ""):
            assert tests[test_id]["status"] == outcome["status"], (attack, test_id)


def test_a_forged_record_never_speaks_in_the_graders_voice(hostile):
    """cheat_forged_record writes its own results into the result pipe: errors of the grader, a
    dead worker, another check's praise, a passed test, a host path. Each is a neutral bad record,
    flagged for the teacher, and nothing of it reaches the report."""
    document = hostile["docs"]["cheat_forged_record"]
    tests = outcomes_by_id(document)
    rejected = Catalog("en").t("sandbox.bad-record")
    for test_id in SECTION_33:
        assert tests[test_id]["message"] == rejected, tests[test_id]
    flagged = {note["detail"] for note in document["integrity"] if note["kind"] == "result.rejected"}
    assert {f"{MODULE}:attention_scores", f"{MODULE}:scores_for_query"} <= flagged
    feedback = (hostile["out"] / "cheat_forged_record" / "feedback.md").read_text()
    for forged in ("problem of the grader", "worker died", "Every check passed", "/etc/shadow", "GraderBug"):
        assert forged not in feedback


def test_exit_at_import_is_an_error_not_a_pass(hostile):
    tests = outcomes_by_id(hostile["docs"]["cheat_exit_at_import"])
    assert {tests[t]["status"] for t in SECTION_33} == {"error"}


@pytest.mark.parametrize("attack", sorted(LIMIT_CASES))
def test_limits_stop_the_attack_and_the_rest_is_graded(hostile, attack):
    broken, statuses = LIMIT_CASES[attack]
    tests = outcomes_by_id(hostile["docs"][attack])
    assert tests[f"{MODULE}::{broken}"]["status"] in statuses, tests[f"{MODULE}::{broken}"]
    assert any(tests[t]["status"] == "passed" for t in SECTION_33 if not t.endswith(broken))
    victim = outcomes_by_id(hostile["docs"]["victim"])
    for test_id, outcome in victim.items():
        if not test_id.startswith(MODULE + "::"):
            assert tests[test_id]["status"] == outcome["status"] == "passed", (attack, test_id)


def test_other_students_results_are_those_of_a_clean_run(hostile):
    for name in ("victim", "victim-stub"):
        hostile_doc, clean_doc = hostile["docs"][name], hostile["clean_docs"][name]
        for key in ("score", "max_score", "sections", "tests", "integrity"):
            assert hostile_doc[key] == clean_doc[key], (name, key)


def test_nothing_outside_the_sandbox_was_written(hostile):
    assert hostile["canary"] == "untouched\n"
    assert not Path("/tmp/attention-kit-pwned").exists()
    assert (hostile["class"] / "victim" / f"{MODULE}.py").read_bytes() == hostile["victim_source"]
    gradebook = (hostile["out"] / "gradebook.csv").read_text()
    assert gradebook.startswith("student,") and "victim,0\n" not in gradebook
    assert not list((ROOT / "grader" / "suites").glob("test_pwned*"))


def test_the_reference_cache_is_readable_by_the_grader_only(hostile):
    """The cached outputs of the reference are the answer key in another form: where nothing hides
    the kit from student code (no bubblewrap, no mount namespace), the sandbox's uid still cannot
    read them; and a run leaves no copy of them in the reports, which are handed out."""
    assert KIT_CACHE.stat().st_mode & 0o777 == 0o700
    for out in (hostile["out"], hostile["clean_out"]):
        assert not (out / CACHE_DIR).exists()


def test_no_student_process_survives(hostile):
    assert hostile["leftover"] == []


def test_results_are_decoded_without_pickle():
    good = codec.encode({"ok": {"x": torch.ones(2, 3)}})
    assert torch.equal(decode(good)["x"], torch.ones(2, 3))
    import io

    buffer = io.BytesIO()
    torch.save({"ok": {"x": torch.ones(2)}}, buffer)  # a pickle: never accepted
    assert decode(buffer.getvalue()).kind == "integrity"
    document = json.dumps({"ok": {"x": {"$t": ["float32", [1000, 1000], 0, 8]}}}).encode()
    assert decode(len(document).to_bytes(4, "big") + document + b"\0" * 8).kind == "integrity"
    for garbage in (b"", b"\xff" * 64, b"\0\0\0\x02[]"):
        assert decode(garbage).kind == "integrity"


def _submission(tmp_path: Path, name: str, extra: str = "") -> Path:
    target = write_solutions(tmp_path / name, note=name)
    if extra:
        (target / f"{MODULE}.py").write_text(solution_source(MODULE) + extra)
    return target


def test_a_killed_worker_loses_no_result(tmp_path):
    """The worker is killed as soon as s0's result is in, when its slot has gone on to s1 (whose
    attention_scores sleeps a second a call, so s1 is still running then): s1 is graded again by a
    new worker, and every run's results are those of a pool nobody killed (there s1 does not sleep:
    the same values, at once)."""
    load_all()
    probes = sorted(name for name in PROBES if name.startswith(MODULE))
    slow = (
        "\nimport time as _time\n_plain = attention_scores\n\ndef attention_scores(inputs):\n"
        "    _time.sleep(1.0)\n    return _plain(inputs)\n"
    )
    submissions = [read_submission(_submission(tmp_path, f"s{i}", slow if i == 1 else "")) for i in range(4)]
    unslowed = [read_submission(_submission(tmp_path / "clean", f"s{i}")) for i in range(4)]
    with SandboxPool(1, LIMITS, probes=probes) as clean_pool:
        for submission in unslowed:
            clean_pool.submit(submission)
        clean = {run.submission.name: run.results for run in clean_pool.results()}
    with SandboxPool(1, LIMITS, probes=probes) as pool:
        for submission in submissions:
            pool.submit(submission)
        runs = pool.results()
        first = next(runs)  # s0's: the slot has gone on to s1
        assert first.submission.name == "s0"
        os.killpg(pool._workers[0].pid, signal.SIGKILL)
        graded = {run.submission.name: run.results for run in [first, *runs]}
    assert set(graded) == set(clean)
    for name, results in graded.items():
        assert set(results) == set(probes)
        for probe, value in results.items():
            assert isinstance(value, dict), (name, probe, value)
            assert all(
                torch.equal(value[k], clean[name][probe][k]) for k in value if isinstance(value[k], torch.Tensor)
            )


@pytest.mark.parametrize(
    "status, kind",
    [
        (mounts.Bubblewrap(installed=False, usable=False), "sandbox.no-bubblewrap"),
        (
            mounts.Bubblewrap(installed=True, usable=False, reason="bwrap: No permissions to create new namespace"),
            "sandbox.bubblewrap-unusable",
        ),
    ],
    ids=["not-installed", "unusable"],
)
def test_a_machine_without_bubblewrap_says_so(hostile, tmp_path, monkeypatch, status, kind):
    monkeypatch.setattr(mounts, "bubblewrap", lambda: status)
    cls = tmp_path / "class"
    _submission(cls, "alice")
    out = tmp_path / "reports"
    summary = grade(cls, out, jobs=1, limits=LIMITS)
    assert kind in {note.kind for note in summary.protections}
    document = json.loads((out / "alice" / "results.json").read_text())
    assert kind in {note["kind"] for note in document["integrity"]}
    assert kind in (out / "gradebook.csv").read_text()
    assert document["score"] == document["max_score"]  # still graded correctly, only less isolated
    feedback = (out / "alice" / "feedback.html").read_text()
    installed = "bubblewrap is not installed"
    if status.installed:
        assert installed not in feedback and status.reason in feedback
    else:
        assert installed in feedback


def test_rerun_grades_only_new_or_changed_submissions(hostile, tmp_path):
    cls, out = tmp_path / "class", tmp_path / "reports"
    for name in ("a", "b", "c"):
        _submission(cls, name)
    first = grade(cls, out, jobs=2, limits=LIMITS)
    assert (first.graded, first.reused) == (3, 0)
    before = {name: (out / name / "results.json").stat().st_mtime_ns for name in ("a", "c")}
    (cls / "b" / f"{MODULE}.py").write_text(solution_source(MODULE).replace("dim=-1", "dim=0"))
    second = grade(cls, out, jobs=2, limits=LIMITS)
    assert (second.graded, second.reused) == (1, 2)
    assert {name: (out / name / "results.json").stat().st_mtime_ns for name in ("a", "c")} == before
    assert json.loads((out / "b" / "results.json").read_text())["score"] < first.results[0].max_score
    assert grade(cls, out, jobs=2, limits=LIMITS, force=True).graded == 3


def test_an_interrupted_run_resumes(hostile, tmp_path):
    cls, out = tmp_path / "class", tmp_path / "reports"
    for name in ("a", "b", "c", "d"):
        _submission(cls, name)

    def interrupt(done: int, count: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grade(cls, out, jobs=1, limits=LIMITS, on_progress=interrupt)
    finished = [name for name in "abcd" if (out / name / "results.json").exists()]
    assert len(finished) == 2
    for name in finished:  # whatever was written is complete
        json.loads((out / name / "results.json").read_text())
        assert (out / name / "feedback.html").exists()
    resumed = grade(cls, out, jobs=1, limits=LIMITS)
    assert (resumed.graded, resumed.reused) == (2, 2)
    assert all(r.score == r.max_score for r in resumed.results)


def test_the_reference_cache_is_readable_by_the_grader_alone(hostile):
    """The cached reference outputs are the answer key: without bubblewrap a child runs as another
    user on the same file system, so the cache folder and files are the grader's only."""
    cache = KIT_CACHE
    files = list(cache.glob("answer-key-*.bin"))
    assert files
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
