"""Round-four attack, after the sealing: a stub sec3_5 module (its class still raises
NotImplementedError) finds the 3.5 probe functions through the garbage collector and swaps their
code objects (`tests/attacks/round5/forge_gc_code.py`). The sealing hides the kit's names only; the
checks that judge metadata the child reports (the mask buffer's names, dtype and shape; the
gradients' names and sizes) rest on nothing but the student's process, and the property checks
accept any causal, input-dependent tensors. Measured: the stub earns 4 of 3.5's 14 points
(test_causality, test_batch_independence, test_mask_is_a_buffer,
test_gradients_reach_every_parameter); the same stub without the appended lines earns 0.

The second attack (`forge_meta_path.py`) uses neither gc nor frames: the stand-ins finder left on
sys.meta_path holds the namespace's bound methods, whose `on_import` lambda's __globals__ is the
child loop's module; there `frame` and `driver.serialise` were looked up at every probe and were
rebound, replacing any probe's record (same 4 points). The child now binds what its loop calls
before student code runs: rebinding a name changes nothing, and this attack earns nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.run import grade
from grader.sandbox.pool import Limits
from tests.conftest import stubs_as_submission

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "attacks" / "round5"
LIMITS = Limits(probe_seconds=5, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30)


GC_BOUND = (
    "Python has no isolation inside a process: code swapped through the garbage collector still forges the"
    " child's records; the property checks bound what that earns to what causal, input-dependent code earns"
)


@pytest.mark.parametrize(
    "attack", [pytest.param("forge_gc_code", marks=pytest.mark.xfail(strict=True, reason=GC_BOUND)), "forge_meta_path"]
)
def test_a_stub_that_rebinds_the_child_earns_nothing(tmp_path, attack):
    cls, out = tmp_path / "class", tmp_path / "reports"
    student = stubs_as_submission(cls / "forger")
    module = student / "sec3_5_causal_attention.py"
    module.write_text(module.read_text() + "\n" + (ATTACKS / f"{attack}.py").read_text())
    grade(cls, out, jobs=1, limits=LIMITS, force=True)
    document = json.loads((out / "forger" / "results.json").read_text())
    passed = [t["id"] for t in document["tests"] if t["status"] == "passed"]
    assert (document["score"], passed) == (0, [])
