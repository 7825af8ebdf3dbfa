"""Round four: points forged from inside the child. A stub submission whose sec3_3 module, at import,
rebinds what the child uses to produce outputs (its probe table, the probes' helpers, the driver's
modes) earns nothing: the fork server hides the kit from the code under test before any of it runs
(grader.sandbox.sealing). The forged outputs are causal and depend on the input, so that only the
forgery, not the checks' demand for real work, stands between them and the points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.run import grade
from grader.sandbox.pool import Limits
from tests.conftest import stubs_as_submission

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "attacks" / "round4"
FORGERIES = sorted(path.stem for path in ATTACKS.glob("forge_*.py"))
LIMITS = Limits(probe_seconds=5, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("forged")
    cls, out = base / "class", base / "reports"
    for attack in FORGERIES:
        student = stubs_as_submission(cls / attack)
        module = student / "sec3_3_simple_attention.py"
        module.write_text(module.read_text() + "\n" + (ATTACKS / f"{attack}.py").read_text())
    summary = grade(cls, out, jobs=2, limits=LIMITS, force=True)
    return {r.submission: json.loads((out / r.submission / "results.json").read_text()) for r in summary.results}


def test_there_are_forgeries():
    assert len(FORGERIES) >= 3


@pytest.mark.parametrize("attack", FORGERIES)
def test_a_forged_probe_earns_nothing(graded, attack):
    document = graded[attack]
    passed = [t["id"] for t in document["tests"] if t["status"] == "passed"]
    assert (document["score"], passed) == (0, [])
