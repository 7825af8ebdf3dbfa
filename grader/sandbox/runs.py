"""What a sandbox pool is given for each job (`Limits`) and gives back (`SandboxRun`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.records import IntegrityNote, ProbeError, Submission


@dataclass(frozen=True)
class Limits:
    probe_seconds: float = 10.0  # CPU time of a probe (a busy machine never times out correct code)
    probe_wall_seconds: float = 30.0  # a probe's wall-clock backstop, for code that sleeps or blocks
    # Wall clock for all probes of one module: a module that sleeps or blocks uses up its own time,
    # never its neighbours' (probe_wall_seconds < module_seconds: one sleeping function leaves its
    # module's other functions time to run). The submission's cap is at least the seven modules'.
    module_seconds: float = 40.0
    submission_seconds: float = 300.0  # wall clock for all probes of a submission (its grade and trace jobs together)
    cpu_seconds: int = 60  # RLIMIT_CPU of each child
    # address space on top of torch's own, per process; and, where the machine has memory control
    # groups (`memory`), all the memory a submission's processes make together (files in memory too)
    memory_bytes: int = 1024**3
    file_bytes: int = 16 * 1024**2
    processes: int = 8  # tasks of the child's uid: processes x memory stays well inside the machine
    # The reference's largest result is 25 kB (GPT-2 size) and all 47 together 60 kB (the buggy
    # variants' at most 61 kB): one result may be 160 times the largest, all of a submission's
    # together 130 times the total (what the trusted process holds per submission in flight).
    payload_bytes: int = 4 * 1024**2
    result_bytes: int = 8 * 1024**2


@dataclass(frozen=True)
class NotRun:
    """Why a job was never run in the sandbox (`tracks.TrackPools.submit`): the submission's note,
    and the catalogue key of the error each of its checks gets."""

    note: IntegrityNote
    key: str = "internal.grading-failed"


@dataclass
class SandboxRun:
    """What came back from the sandbox for one job: per probe, outputs or an error."""

    submission: Submission
    results: dict[str, dict[str, Any] | ProbeError] = field(default_factory=dict)
    mode: str = "grade"
    job: int = 0
    track: str = "pytorch"  # the framework its code was run as (grader.frameworks.track_of)
    # a digest of each result's payload as it came from the sandbox: the same bytes, the same result
    digests: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0  # wall-clock seconds of the submission's time the job used
    not_run: NotRun | None = None  # set when the sandbox never ran the job: `results` is empty
