"""Shared fixtures for the kit's own tests."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]


def solutions_as_submission(target: Path) -> Path:
    """The reference solutions rewritten as a student would hand them in (sibling imports)."""
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        source = (ROOT / "solutions" / f"{module}.py").read_text()
        (target / f"{module}.py").write_text(re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M))
    return target


def mindspore_solutions_as_submission(target: Path) -> Path:
    """The MindSpore reference (solutions/mindspore) as a student of that track would hand it in."""
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        source = (ROOT / "solutions" / "mindspore" / f"{module}.py").read_text()
        (target / f"{module}.py").write_text(re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M))
    return target


def stubs_as_submission(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        shutil.copy(ROOT / "grader" / "exercises" / f"{module}.py", target / f"{module}.py")
    return target


@pytest.fixture(autouse=True)
def _import_finders_put_back():
    """A student namespace made in the test process (in-process grading, tracing) puts its stand-ins
    finder first on sys.meta_path, as the sandbox child does: each test gets the finders it started
    with back, so that a later test's imports of the seven modules (the stubs, check.py run in this
    process) are never answered from an earlier test's folder."""
    finders = list(sys.meta_path)
    yield
    sys.meta_path[:] = finders


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


# The test files that take longest (`pytest --durations`), longest first: run first, so that the
# workers of `make test` (pytest-xdist, a whole file per worker) do not wait at the end for a long
# file started last. Only the order changes; a file missing here runs after these, in its place.
LONGEST_FIRST = (
    "test_readme.py",
    "test_nbgrader_hostile_notebooks.py",
    "test_nbgrader_e2e.py",
    "test_hostile_links_names_and_compiled_code.py",
    "test_sandbox_attacks.py",
    "test_batch_isolation.py",
    "test_sandbox_mindspore.py",
    "test_hostile_class.py",
    "test_hostile_names.py",
    "test_sandbox.py",
    "test_prairielearn.py",
    "test_diagnosis_relied_on.py",
)


# The test files that start no sandbox pool, no nbgrader and no clone (and no subprocess of the
# grader): `make check` runs these (marker `inner`), `make test` runs everything.
INNER_LOOP = (
    "test_answer_key_cache.py",
    "test_code_layout.py",
    "test_degenerate_forwards.py",
    "test_diagnosis_layout.py",
    "test_diagnosis_tracer_hostile.py",
    "test_forged_results.py",
    "test_inert_outputs.py",
    "test_lms_blackboard_brightspace.py",
    "test_lms_names.py",
    "test_mindspore_adapter.py",
    "test_near_misses.py",
    "test_probes.py",
    "test_recognition.py",
    "test_sandbox_boundary.py",
    "test_sandbox_mounts.py",
    "test_sandbox_outbox.py",
    "test_solutions_book_values.py",
    "test_stubs.py",
    "test_suites_compare.py",
    "test_trusted_text_caps.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.name in INNER_LOOP:
            item.add_marker(pytest.mark.inner)


def forget_public_checks() -> None:
    """Forget every module of the public checks (ch3_checks, ch3_check_*) that a test imported from a
    bundle or a course folder, so that the next test imports its own bundle's and not a stale one."""
    for name in [name for name in sys.modules if name.startswith("ch3_check")]:
        sys.modules.pop(name, None)
