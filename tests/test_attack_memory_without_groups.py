"""Round-four attacks on memory without memory groups (issue 36, point 5: "every page a
submission makes — mapped, shared memory, memfd, tmpfs — counts against one limit per submission").
Where the machine offers no
memory group, a child that attaches, fills and detaches 8 MB System V segments
(`tests/attacks/round5_sysv_hoard.py`) kept twice its 64 MB limit (128 MB, measured; the segments
live as long as the child's IPC namespace): the fallback now refuses shmget (and msgget), as it
refuses memfd. With a memory group the same attack is stopped ("used more than 64 MB"). Either
way the next student is graded as usual. Second test: without bubblewrap too, /dev/shm."""

from __future__ import annotations

import os

import pytest

from grader.intake.discovery import read_submission
from grader.records import ProbeError
from grader.sandbox import memory, mounts
from grader.sandbox.pool import Limits, SandboxPool
from tests.conftest import solutions_as_submission
from tests.test_sandbox_attacks import NO_BUBBLEWRAP, PROBE, SECTION_PROBES, attacked, run_all

LIMIT_MB = 64
LIMITS = Limits(
    probe_seconds=5, probe_wall_seconds=30, submission_seconds=120, cpu_seconds=30, memory_bytes=LIMIT_MB * 1024**2
)


def test_without_memory_groups_system_v_shared_memory_is_bounded(tmp_path, monkeypatch):
    def none() -> memory.Hierarchy:
        raise OSError("no cgroup memory controller is mounted")

    monkeypatch.setattr(memory, "find", none)
    hoard = attacked(tmp_path, "hoard", "round5_sysv_hoard.py", LIMIT_MB=str(LIMIT_MB))
    honest = read_submission(solutions_as_submission(tmp_path / "honest"))
    with SandboxPool(1, LIMITS, probes=SECTION_PROBES) as pool:
        results = run_all(pool, [hoard, honest])
    stopped = results["hoard"][PROBE]
    assert isinstance(stopped, ProbeError)
    assert "kept" not in stopped.message, stopped.message  # the hoard never got to say what it kept
    assert not isinstance(results["honest"][PROBE], ProbeError), results["honest"][PROBE]


@pytest.mark.xfail(os.getuid() != 0, strict=True, reason="a child that is not root cannot cover /dev/shm")
def test_without_memory_groups_nor_bubblewrap_dev_shm_is_bounded(tmp_path, monkeypatch):
    """Without bubblewrap nor a private view the host's /dev/shm was the child's to fill, file by
    file below RLIMIT_FSIZE (128 MB kept under a 64 MB limit): a root grader's child now covers it
    with an empty, read-only tmpfs in a mount namespace of its own before any student code runs."""

    def none() -> memory.Hierarchy:
        raise OSError("no cgroup memory controller is mounted")

    monkeypatch.setattr(memory, "find", none)
    monkeypatch.setattr(mounts, "bubblewrap", lambda: NO_BUBBLEWRAP)
    monkeypatch.setattr(mounts, "private_view", lambda *args: "")
    hoard = attacked(tmp_path, "hoard", "memory_hoard.py", WHERE="shm", LIMIT_MB=str(LIMIT_MB))
    with SandboxPool(1, LIMITS, probes=SECTION_PROBES) as pool:
        results = run_all(pool, [hoard])
    stopped = results["hoard"][PROBE]
    assert isinstance(stopped, ProbeError)
    assert "kept" not in stopped.message, stopped.message
