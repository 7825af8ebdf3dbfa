"""The trusted side of one warm worker: starts it, hands it jobs and reads its frames.

Nothing the worker sends is trusted: a frame must belong to the job in hand, name a probe of that
job that has no result yet, and carry one of the known statuses; a payload is read only when it
fits both the per-result limit and what is left of the submission's byte budget (otherwise it is
skipped as it arrives, never held); each result is decoded and checked (`boundary`) as soon as it
is read, and its raw bytes dropped. Every wait ends at the job's absolute deadline.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from typing import IO

from grader.records import ProbeError, Submission
from grader.sandbox.boundary import STATUSES, Budget, decode, status_error
from grader.sandbox.channel import ChannelError, FrameReader, until

START_SECONDS = 120  # a worker imports torch and warms up; a busy machine can take a while


class WorkerFailed(RuntimeError):
    """The worker did not start."""


class WorkerConnection:
    def __init__(
        self, command: Callable[[int], list[str]], environment: dict[str, str], inherited: tuple[int, ...] = ()
    ):
        """Start the worker `command(result_fd)` gives; `inherited`: more descriptors it gets
        (its memory group's, `memory.MemoryGroups.descriptors`)."""
        read_fd, write_fd = os.pipe()
        self.fd = read_fd
        try:
            self.process = subprocess.Popen(
                command(write_fd),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(write_fd, *inherited),
                env=environment,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        assert self.process.stdin is not None  # stdin=PIPE
        self.stdin: IO[bytes] = self.process.stdin
        self.reader = FrameReader(read_fd)
        try:
            header = self.reader.header(until(time.monotonic() + START_SECONDS))
        except (OSError, ValueError, TimeoutError):
            header = None
        if not header or header.get("status") != "ready" or header["size"]:
            self.kill()
            raise WorkerFailed("the sandbox worker failed to start")

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(
        self,
        job: dict,
        results: dict[str, dict | ProbeError],
        budget: Budget,
        deadline: float,
        payload_bytes: int,
        digests: dict[str, bytes] | None = None,
    ) -> bool:
        """Run one job (see `worker`); fills `results` (and `digests`: each result's payload digest).
        False when the worker died, missed the deadline or broke the protocol (the caller then
        kills it)."""
        probes = set(job["probes"])
        remaining = until(deadline)
        try:
            self.stdin.write(json.dumps(job).encode() + b"\n")
            self.stdin.flush()
            while True:
                header = self.reader.header(remaining)
                if header is None or header.get("id") != job["id"]:
                    return False
                status, name, size = header.get("status"), header.get("probe"), header["size"]
                if status == "done":
                    return size == 0
                if (
                    type(name) is not str
                    or type(status) is not str
                    or name not in probes
                    or name in results
                    or (status != "ok" and status not in STATUSES)
                ):
                    return False
                if status != "ok":
                    if size:
                        return False
                    results[name] = status_error(
                        status,
                        header.get("module"),
                        _limit_of(status, job["limits"], payload_bytes),
                        job["limits"]["module_seconds"] if status == "module-timeout" else 0,
                    )
                elif size > payload_bytes or not budget.take(size):
                    if not self.reader.skip(size, remaining):
                        return False
                    results[name] = status_error(
                        *(
                            ("too-large", "", payload_bytes)
                            if size > payload_bytes
                            else ("over-budget", "", budget.total)
                        )
                    )
                else:
                    payload = self.reader.payload(size, remaining)
                    if payload is None:
                        return False
                    results[name] = decode(payload, budget)
                    if digests is not None:
                        digests[name] = hashlib.blake2b(payload, digest_size=32).digest()
                    del payload
        except (OSError, ValueError, TimeoutError, ChannelError):
            return False

    def end(self, job_id: int, deadline: float) -> bool:
        """Say that nothing follows a job to follow (see `worker`); False if its answer never came."""
        try:
            self.stdin.write(json.dumps({"id": job_id, "end": True}).encode() + b"\n")
            self.stdin.flush()
            header = self.reader.header(until(deadline))
        except (OSError, ValueError, TimeoutError, ChannelError):
            return False
        return (
            header is not None and header.get("id") == job_id and header.get("status") == "done" and header["size"] == 0
        )

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass
        self._close_fd()

    def _close_fd(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1

    def stop(self) -> None:
        try:
            self.stdin.close()
            self.process.wait(timeout=5)
            self._close_fd()
        except Exception:  # noqa: BLE001
            self.kill()


def _limit_of(status: str, limits: dict, payload_bytes: int) -> int:
    """The size limit a status says was exceeded (0: none)."""
    if status == "too-large":
        return payload_bytes
    return limits["memory_bytes"] if status == "memory" else 0


def job_record(
    job_id: int, submission: Submission, probes: list[str], mode: str, limits: dict, track: str = "pytorch"
) -> dict:
    """The job line a worker reads: the submission's files, its track, the probes, the mode and the limits."""
    return {
        "id": job_id,
        "probes": probes,
        "mode": mode,
        "limits": limits,
        "track": track,
        "files": {
            f"{module}.py": base64.b64encode(source.encode()).decode() for module, source in submission.sources.items()
        },
    }


def environment() -> dict[str, str]:
    """A minimal environment: nothing of the grader's (tokens, paths) reaches student code.

    glibc.malloc.hugetlb=1 asks glibc's malloc for transparent huge pages: torch's ~100 MB heap
    then takes 2 MB pages, so each fork of the worker copies (and each child's exit frees) about
    fifty page-table entries instead of some 25,000 (see warmup.use_huge_pages).
    """
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    }
