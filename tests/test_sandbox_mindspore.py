"""Hostile MindSpore submissions, graded by `grade` in the sandbox's MindSpore workers, are
contained like PyTorch ones (tests/test_sandbox.py): each attack costs only the functions it
breaks, cheating earns nothing, nothing outside is read or written, no process survives, and the
other students' results are those of a clean run.

Each student is the MindSpore reference with `sec3_3_simple_attention.py` changed: the framework-
neutral attacks of tests/attacks/ (reading the answer key, writing outside, the network, forking
without end, looping) and MindSpore's own (tests/attacks/mindspore/: a memory bomb through
MindSpore's allocator, a child forked after MindSpore ops that hangs at its first .asnumpy()).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("mindspore")

from grader.records import MODULES
from grader.run import grade
from grader.sandbox.pool import Limits
from tests.conftest import ROOT
from tests.test_sandbox import MODULE, SECTION_33, outcomes_by_id, slot_processes

ATTACKS = ROOT / "tests" / "attacks"
MS_ATTACKS = ATTACKS / "mindspore"
# CPU seconds per probe (a busy machine never times out correct code); the wall-clock backstop
# ends the probe that blocks in waitpid() on its hung child. MindSpore's probes need the default
# 1 GiB of address space on top of the worker's (exercise-api.md §4).
LIMITS = Limits(probe_seconds=5, probe_wall_seconds=20, submission_seconds=120, cpu_seconds=30)
CHEATS = ["cheat_read_answer_key", "cheat_write_elsewhere", "cheat_network", "cheat_exit_at_import"]
LIMIT_CASES = {  # attack -> (file, the test it breaks, the statuses that test may end in)
    "limit_infinite_loop": (ATTACKS, "test_softmax_naive", {"timeout"}),
    "limit_fork_bomb": (ATTACKS, "test_context_vector_for_query", {"timeout", "resource", "error"}),
    "ms_memory_bomb": (MS_ATTACKS / "limit_memory_bomb.py", "test_attention_scores", {"resource"}),
    "ms_hang_at_asnumpy": (MS_ATTACKS / "limit_hang_at_asnumpy.py", "test_softmax_naive", {"timeout", "error"}),
}
# a correct function that leaves threads or processes behind: exercise 3.1's, whose probes run first
LEFTOVERS = ["leftover_threads", "leftover_processes"]
LEFTOVER_MODULE = "exercise3_1_weight_transfer"


def ms_source(module: str) -> str:
    source = (ROOT / "solutions" / "mindspore" / f"{module}.py").read_text()
    return re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M)


def write_ms_solutions(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        (target / f"{module}.py").write_text(ms_source(module))
    return target


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("ms-sandbox")
    cls, out = base / "class", base / "reports"
    clean_cls, clean_out = base / "clean", base / "clean-reports"
    canary = ROOT / f".sandbox-canary-ms-{os.getpid()}"
    canary.write_text("untouched\n")
    values = {"{REPO}": str(ROOT), "{CLASS}": str(cls), "{OUT}": str(out), "{CANARY}": str(canary)}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    for target in (cls, clean_cls):
        write_ms_solutions(target / "victim")
    wrong = (MS_ATTACKS / "_wrong_unless_cheat.py").read_text()
    # "import mindspore" first: even the attacks that import nothing else are MindSpore students
    for attack in CHEATS:
        write_ms_solutions(cls / attack)
        (cls / attack / f"{MODULE}.py").write_text(
            "import mindspore\n" + fill((ATTACKS / f"{attack}.py").read_text()) + wrong
        )
    for attack, (where, _, _) in LIMIT_CASES.items():
        write_ms_solutions(cls / attack)
        path = where / f"{attack}.py" if where.is_dir() else where
        (cls / attack / f"{MODULE}.py").write_text(ms_source(MODULE) + "\n" + fill(path.read_text()))
    for attack in LEFTOVERS:
        write_ms_solutions(cls / attack)
        (cls / attack / f"{LEFTOVER_MODULE}.py").write_text(
            ms_source(LEFTOVER_MODULE)
            + "\n"
            + (ATTACKS / f"{attack}.py").read_text().replace("{FUNCTION}", "transfer_weights")
        )
    victim_source = (cls / "victim" / f"{MODULE}.py").read_bytes()
    try:
        started = time.perf_counter()
        summary = grade(cls, out, jobs=2, limits=LIMITS, force=True)
        seconds = time.perf_counter() - started
        leftover = slot_processes()
        clean = grade(clean_cls, clean_out, jobs=1, limits=LIMITS, force=True)
        yield {
            "summary": summary,
            "out": out,
            "class": cls,
            "leftover": leftover,
            "seconds": seconds,
            "docs": {
                r.submission: json.loads((out / r.submission / "results.json").read_text()) for r in summary.results
            },
            "clean_docs": {
                r.submission: json.loads((clean_out / r.submission / "results.json").read_text()) for r in clean.results
            },
            "canary": canary.read_text(),
            "victim_source": victim_source,
        }
    finally:
        canary.unlink(missing_ok=True)


def test_every_student_is_graded_on_the_mindspore_track(hostile):
    docs = hostile["docs"]
    assert set(docs) == {"victim", *CHEATS, *LIMIT_CASES, *LEFTOVERS}
    assert {d["track"] for d in docs.values()} == {"mindspore"}
    assert docs["victim"]["score"] == docs["victim"]["max_score"] > 0
    assert not hostile["summary"].protections  # the full sandbox: bubblewrap, uids, no network


@pytest.mark.parametrize("attack", CHEATS)
def test_cheating_earns_nothing(hostile, attack):
    tests = outcomes_by_id(hostile["docs"][attack])
    victim = outcomes_by_id(hostile["docs"]["victim"])
    for test_id in SECTION_33:
        assert tests[test_id]["status"] != "passed", (attack, test_id, tests[test_id]["message"])
        assert tests[test_id]["points"] == 0
    for test_id, outcome in victim.items():
        if not test_id.startswith(MODULE + "::") and not tests[test_id].get("blocked_by"):
            assert tests[test_id]["status"] == outcome["status"] == "passed", (attack, test_id)


@pytest.mark.parametrize("attack", sorted(LIMIT_CASES))
def test_limits_stop_the_attack_and_the_rest_is_graded(hostile, attack):
    _, broken, statuses = LIMIT_CASES[attack]
    tests = outcomes_by_id(hostile["docs"][attack])
    assert tests[f"{MODULE}::{broken}"]["status"] in statuses, tests[f"{MODULE}::{broken}"]
    assert any(tests[t]["status"] == "passed" for t in SECTION_33 if not t.endswith(broken))
    for test_id in outcomes_by_id(hostile["docs"]["victim"]):
        if not test_id.startswith(MODULE + "::"):
            assert tests[test_id]["status"] == "passed", (attack, test_id, tests[test_id]["message"])


@pytest.mark.parametrize("attack", LEFTOVERS)
def test_what_a_function_leaves_behind_costs_the_later_modules_nothing(hostile, attack):
    """Three threads or processes (and a zombie) left behind by exercise 3.1's (correct)
    transfer_weights, while the child lives on, took the room MindSpore's threads need under the
    task limit: every later module's test failed with a RuntimeError (0 of 63 points). The probes
    after it now run in a fresh child (the module's own may still fail: it starts them again there)."""
    tests = outcomes_by_id(hostile["docs"][attack])
    failed = {
        test_id: test["message"]
        for test_id, test in tests.items()
        if not test_id.startswith(LEFTOVER_MODULE + "::") and test["status"] != "passed"
    }
    assert len(tests) > len(SECTION_33) and not failed, failed


def test_the_victim_is_graded_as_in_a_clean_run(hostile):
    hostile_doc, clean_doc = hostile["docs"]["victim"], hostile["clean_docs"]["victim"]
    for key in ("score", "max_score", "sections", "tests", "integrity", "track"):
        assert hostile_doc[key] == clean_doc[key], key


def test_nothing_outside_the_sandbox_was_written(hostile):
    assert hostile["canary"] == "untouched\n"
    assert not Path("/tmp/attention-kit-pwned").exists()
    assert (hostile["class"] / "victim" / f"{MODULE}.py").read_bytes() == hostile["victim_source"]
    assert "victim,0\n" not in (hostile["out"] / "gradebook.csv").read_text()


def test_no_student_process_survives(hostile):
    """The hung child of ms_hang_at_asnumpy and the fork bomb's processes included."""
    assert hostile["leftover"] == []
