"""One memory limit per submission: every page a submission's processes keep (memfd files never
mapped, files in /dev/shm and on the sandbox's tmpfs, shared mappings spread over processes)
counts against its memory group's limit; past it, that student gets "used more than N MB" and
the next student in the same worker is graded as usual. Where the machine offers no memory
group, the report says so and memfd is refused. The attack is tests/attacks/memory_hoard.py; the
limit is lowered to 256 MB so that the attack keeps at most 512 MB."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.i18n import Catalog
from grader.intake.discovery import read_submission
from grader.records import ProbeError
from grader.sandbox import memory, mounts
from grader.sandbox.pool import Limits, SandboxPool
from tests.conftest import solutions_as_submission
from tests.test_sandbox_attacks import NO_BUBBLEWRAP, PROBE, SECTION_PROBES, attacked, run_all

LIMIT_MB = 256
LIMITS = Limits(
    probe_seconds=5, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30, memory_bytes=LIMIT_MB * 1024**2
)


def _groups_or_skip() -> None:
    try:
        memory.find()
    except OSError as exc:
        pytest.skip(f"this machine offers no memory control group: {exc}")


def _hoard_then_honest(tmp_path: Path, where: str) -> dict[str, dict]:
    hoard = attacked(tmp_path, "hoard", "memory_hoard.py", WHERE=where, LIMIT_MB=str(LIMIT_MB))
    honest = read_submission(solutions_as_submission(tmp_path / "honest"))
    with SandboxPool(1, LIMITS, probes=SECTION_PROBES) as pool:  # one worker: the same slot for both
        assert pool.memory.groups, pool.memory.reason
        assert not [note for note in pool.protections() if note.kind == "sandbox.no-memory-group"]
        return run_all(pool, [hoard, honest])


@pytest.mark.parametrize(
    "where, bubblewrap",
    [("memfd", True), ("tmpfs", True), ("shared", True), ("shm", False)],
    ids=["memfd-never-mapped", "tmpfs-own-folder", "shared-mappings-in-four-processes", "dev-shm"],
)
def test_memory_kept_anywhere_counts_and_the_next_student_is_graded(tmp_path, monkeypatch, where, bubblewrap):
    """/dev/shm is writable by a child only without bubblewrap or the workers' own mount namespace
    (then it is the host's); inside them it is not the child's to write."""
    _groups_or_skip()
    if not bubblewrap:
        monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
        monkeypatch.setattr(mounts, "private_view", lambda *args: "")
    results = _hoard_then_honest(tmp_path, where)
    stopped = results["hoard"][PROBE]
    assert isinstance(stopped, ProbeError) and stopped.key == "sandbox.memory", stopped
    for lang in ("en", "zh"):
        text = Catalog(lang).t(stopped.key, **stopped.params)
        assert f"{LIMIT_MB} MB" in text and "{" not in text
    assert "more than 256 MB" in Catalog("en").t(stopped.key, **stopped.params)
    # the hoard's functions that never call attention_scores are still graded
    assert not isinstance(results["hoard"][f"{PROBE.split(':')[0]}:softmax_naive"], ProbeError)
    honest = results["honest"]
    assert set(honest) == set(SECTION_PROBES)
    assert not [name for name, result in honest.items() if isinstance(result, ProbeError)], honest


def test_without_memory_groups_the_report_says_so_and_memfd_is_refused(tmp_path, monkeypatch):
    def none() -> memory.Hierarchy:
        raise OSError("no cgroup memory controller is mounted")

    monkeypatch.setattr(memory, "find", none)
    hoard = attacked(tmp_path, "hoard", "memory_hoard.py", WHERE="memfd", LIMIT_MB=str(LIMIT_MB))
    honest = read_submission(solutions_as_submission(tmp_path / "honest"))
    with SandboxPool(1, LIMITS, probes=SECTION_PROBES) as pool:
        notes = [note for note in pool.protections() if note.kind == "sandbox.no-memory-group"]
        results = run_all(pool, [hoard, honest])
    assert [note.detail for note in notes] == ["no cgroup memory controller is mounted"]
    for lang in ("en", "zh"):
        text = Catalog(lang).t("integrity.sandbox.no-memory-group", detail=notes[0].detail)
        assert notes[0].detail in text and "{" not in text
    refused = results["hoard"][PROBE]
    assert isinstance(refused, ProbeError) and refused.exc_type == "OSError" and "not implemented" in refused.message
    assert not [name for name, result in results["honest"].items() if isinstance(result, ProbeError)]


def test_a_pools_groups_are_removed_when_it_closes():
    _groups_or_skip()
    with SandboxPool(2, LIMITS, probes=[]) as pool:
        base = pool.memory.base
        assert base is not None and len(pool.memory.groups) == 2
        assert all(group.path.is_dir() for group in pool.memory.groups)
    assert not base.exists()


def test_the_groups_folder_is_found_where_a_hierarchy_is_mounted_at_a_group_below_its_top(tmp_path):
    """A container without a cgroup namespace of its own mounts the hierarchy at its own group:
    the group /proc/self/cgroup names is then relative to that mount."""
    point = tmp_path / "memory"
    assert memory._folder((point, "/docker/abc"), "/docker/abc") == (point, True)
    assert memory._folder((point, "/docker/abc"), "/docker/abc/inner") == (point / "inner", False)
    assert memory._folder((point, "/"), "/user.slice/a.scope") == (point / "user.slice/a.scope", False)
    assert memory._folder((point, "/"), "/") == (point, True)
