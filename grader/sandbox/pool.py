"""The trusted side of the sandbox: warm workers, one job per submission (and mode), results
checked at the boundary.

Memory stays bounded whatever students send: each job's results are charged to a byte budget as
they arrive (`Limits.result_bytes`, `boundary.Budget`), and finished runs wait in a queue of at
most `jobs` entries, so the trusted process holds at most about 2 x jobs + 1 submissions' results
(3 x jobs + 1 with the traced runs the grading session holds back, at most `jobs` of them).
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

import grader
import solutions  # only to find (and hide) where the answer key lives
from grader.frameworks import track_of
from grader.records import IntegrityNote, ProbeError, Submission
from grader.sandbox import exposure, mounts
from grader.sandbox.boundary import Budget, decode, error_from_dict, result_from_record
from grader.sandbox.connection import WorkerConnection, environment, job_record
from grader.sandbox.memory import MemoryGroups
from grader.sandbox.runs import Limits, SandboxRun
from grader.sandbox.slots import uid_base

__all__ = ["Limits", "SandboxPool", "SandboxRun", "decode", "error_from_dict", "result_from_record"]

# torch (through the codec) is imported where results are decoded, not here: a pool can start its
# workers before the grader itself has paid for importing torch.

KIT_ROOT = Path(grader.__file__).resolve().parent
# What the workers run, copied out of the kit (never the suites, the solutions or the trusted side).
SANDBOX_FILES = [
    "__init__.py",
    "sections.py",
    "stand_ins.py",
    "probes",
    "frameworks",
    "sandbox/__init__.py",
    "sandbox/channel.py",
    "sandbox/child.py",
    "sandbox/cleanup.py",
    "sandbox/clocks.py",
    "sandbox/codec.py",
    "sandbox/driver.py",
    "sandbox/forks.py",
    "sandbox/forkserver.py",
    "sandbox/private_view.py",
    "sandbox/seccomp.py",
    "sandbox/sealing.py",
    "sandbox/warmup.py",
    "sandbox/worker.py",
    "sandbox/job.py",
    "sandbox/watch.py",
    "sandbox/oom.py",
]
GRACE_SECONDS = 30  # after a job's own deadline, for its worker to stop the child and answer
ATTEMPTS = 3


class SandboxPool:
    """`jobs` warm workers; each grades one submission at a time in a restricted forked child.

    The workers start as soon as the pool exists (each imports torch: about two seconds), so that
    their start-up overlaps whatever the caller does before submitting. `flavour` selects the
    workers' warm-up (`warmup.FLAVOURS`); `forks`, when known (not 0), how many submissions each
    worker will grade (a worker for a few skips what pays off over many: `warmup.finish`). Pools that
    work side by side (`tracks.TrackPools`) share one `results` queue and take different
    `first_slot`s (each slot has its own uid).
    """

    def __init__(
        self,
        jobs: int,
        limits: Limits = Limits(),
        hide: Sequence[Path] = (),
        probes: Sequence[str] = (),
        flavour: str = "torch",
        results: queue.Queue | None = None,
        first_slot: int = 0,
        ids: Iterator[int] | None = None,
        forks: int = 0,
    ):
        self.jobs = max(1, jobs)
        self.forks = forks
        self.limits = limits
        self.probes = list(probes)
        self.flavour = flavour
        self.staging = Path(tempfile.mkdtemp(prefix="attention-kit-sandbox-"))
        self._stage_code()
        self.bubblewrap = mounts.bubblewrap()
        self.use_bwrap = self.bubblewrap.usable
        self.is_root = os.getuid() == 0
        self.uid_base = uid_base() + first_slot
        # one memory limit per slot, i.e. per submission in flight (none where the machine offers no groups)
        self.memory = MemoryGroups(self.jobs, limits.memory_bytes, str(self.uid_base))
        self.roots = mounts.python_roots()
        hidden = [KIT_ROOT, *mounts.git_folders(KIT_ROOT.parent), Path(solutions.__file__).resolve().parent, *hide]
        if (KIT_ROOT.parent / "pyproject.toml").exists():
            hidden.append(KIT_ROOT.parent)
        self.hidden = mounts.mounted_hidden(hidden, self.roots)
        # without bubblewrap, as root: the workers' own mount namespace hides the same and more
        self.view = mounts.private_view(self.roots, hidden, self.staging) if self.is_root and not self.use_bwrap else ""
        self._closed = False
        self._kill_now = False
        self._ids = ids if ids is not None else itertools.count(1)  # shared by pools of one stream
        self._workers: dict[int, WorkerConnection] = {}
        self._jobs: queue.Queue = queue.Queue()
        # job to follow -> what follows it: (job id, probes, mode, seconds), or None for nothing
        self._decisions: dict[int, queue.Queue] = {}
        self._results: queue.Queue = queue.Queue(maxsize=self.jobs) if results is None else results
        self._threads = [threading.Thread(target=self._slot, args=(slot,), daemon=True) for slot in range(self.jobs)]
        self._pending = 0
        for thread in self._threads:
            thread.start()

    # -- public API -------------------------------------------------------------------------------
    def protections(self) -> list[IntegrityNote]:
        """Protections this machine cannot provide; empty when the sandbox is complete."""
        notes = []
        if not self.bubblewrap.installed:
            notes.append(IntegrityNote("sandbox.no-bubblewrap", "bwrap"))
        elif not self.use_bwrap:
            notes.append(IntegrityNote("sandbox.bubblewrap-unusable", self.bubblewrap.reason))
        if not self.is_root:
            notes.append(IntegrityNote("sandbox.no-uid-separation", str(os.getuid())))
        if not self.use_bwrap and not self.is_root:
            notes.append(IntegrityNote("sandbox.no-network-isolation", "unshare"))
        if not self.memory.groups:
            notes.append(IntegrityNote("sandbox.no-memory-group", self.memory.reason))
        # a kit in site-packages (a pip install) is in a folder mounted for the child: bubblewrap
        # covers it (`self.hidden`), and so does a root grader's mount namespace (private_view);
        # where neither can run, it is in reach. Where a root grader cannot make a namespace (no
        # CAP_SYS_ADMIN: a container) file permissions alone keep the answer key from the
        # children, which run under their own uid
        covered = self.use_bwrap or (self.is_root and mounts.has_sys_admin())
        unhidden = not self.use_bwrap and self.is_root and not mounts.has_sys_admin()
        notes += [
            note
            for note in exposure.answer_key_exposure()
            if (note.kind == "deploy.kit-in-site-packages" and not covered) or unhidden
        ]
        return notes

    def submit(
        self,
        submission: Submission,
        probes: list[str] | None = None,
        mode: str = "grade",
        track: str | None = None,
        seconds: float | None = None,
        follow: bool = False,
    ) -> int:
        """Queue a job: run `probes` (default: the pool's) of `submission` in `mode` (a mode of
        `driver.MODES`) as code of `track` (default: the one its sources show), within `seconds`
        of wall clock (default: `Limits.submission_seconds`; a later job of the same submission
        gets what its earlier ones left, `SandboxRun.seconds`). A submission may be submitted
        several times; returns the job's id.

        A job to `follow` keeps its slot once its run is delivered, its last child parked (see
        `worker`), until the caller says what follows: `follow_up` (more probes of the same
        submission, run in that child: no fork, no imports again) or `release`. Exactly one of the
        two must be called for each such run, after `results()` has yielded it."""
        job_id = next(self._ids)
        self._pending += 1
        seconds = self.limits.submission_seconds if seconds is None else min(seconds, self.limits.submission_seconds)
        if follow:
            self._decisions[job_id] = queue.Queue(maxsize=1)
        self._jobs.put(
            (
                job_id,
                submission,
                list(self.probes if probes is None else probes),
                mode,
                track or track_of(submission.sources),
                max(0.0, seconds),
            )
        )
        return job_id

    def follow_up(self, run: SandboxRun, probes: list[str], mode: str = "trace", seconds: float | None = None) -> int:
        """Run `probes` of `run`'s submission in `mode` next, as a job of its own (its id is
        returned; its run comes from `results()`): in the child that ran `run`'s job when that job
        was one to follow (`submit(follow=True)`), otherwise submitted as a new job."""
        decisions = self._decisions.get(run.job)
        if decisions is None:
            return self.submit(run.submission, probes, mode, run.track, seconds)
        job_id = next(self._ids)
        self._pending += 1
        seconds = self.limits.submission_seconds if seconds is None else min(seconds, self.limits.submission_seconds)
        decisions.put((job_id, list(probes), mode, max(0.0, seconds)))
        return job_id

    def release(self, run: SandboxRun) -> None:
        """Nothing follows `run`'s job: its slot takes the next job (no-op for a job not to follow)."""
        decisions = self._decisions.get(run.job)
        if decisions is not None:
            decisions.put(None)

    def results(self) -> Iterator[SandboxRun]:
        while self._pending:
            run = self._results.get()
            self._pending -= 1
            yield run

    def ready(self) -> bool:
        """Whether a finished run is waiting to be taken from `results()`."""
        return not self._results.empty()

    def close(self, kill: bool = False) -> None:
        """Stop the workers; `kill` does not wait for the jobs in flight (an interrupted run)."""
        if self._closed:
            return
        self._closed = True
        if kill:
            self._kill_now = True
            for worker in list(self._workers.values()):
                worker.kill()
        for decisions in list(self._decisions.values()):
            try:
                decisions.put_nowait(None)  # a slot still waiting for what follows its job: nothing
            except queue.Full:
                pass
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        self.memory.close()
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(kill=exc_type is not None)

    # -- workers ----------------------------------------------------------------------------------
    def _stage_code(self) -> None:
        """Copy only the probe and sandbox code (never suites or solutions) for the workers."""
        target = self.staging / "kit" / "grader"
        for name in SANDBOX_FILES:
            source = KIT_ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
        os.chmod(self.staging, 0o755)

    def _spawn(self, slot: int) -> WorkerConnection:
        kit = self.staging / "kit"
        bwrap = mounts.bwrap_command(kit, self.roots, self.hidden) if self.use_bwrap else None
        group = self.memory.descriptors(slot)
        try:
            worker = WorkerConnection(
                lambda fd: mounts.worker_command(
                    kit, self.uid_base + slot, fd, self.flavour, bwrap, self.view, self.forks, group
                ),
                environment(),
                group or (),
            )
        finally:
            for descriptor in group or ():
                os.close(descriptor)
        self._workers[slot] = worker
        return worker

    def _job_limits(self, deadline: float, budget: Budget) -> dict:
        limits = asdict(self.limits)
        limits["submission_seconds"] = max(0.0, deadline - GRACE_SECONDS - time.monotonic())
        limits["result_bytes"] = budget.left
        limits["network_isolated"] = self.use_bwrap
        return limits

    def _slot(self, slot: int) -> None:
        worker = None
        try:
            worker = self._spawn(slot)
        except Exception:  # noqa: BLE001 - tried again (and reported) with the first job
            worker = None
        while True:
            job = self._jobs.get()
            if job is None:
                break
            worker = self._run_job(slot, worker, *job)
            decisions = self._decisions.get(job[0])
            if decisions is not None:
                worker = self._follow(slot, worker, decisions.get(), *job)
                del self._decisions[job[0]]
        if worker is not None:
            worker.stop()
        self._workers.pop(slot, None)

    def _run_job(
        self,
        slot: int,
        worker: WorkerConnection | None,
        job_id: int,
        submission: Submission,
        probes: list[str],
        mode: str,
        track: str,
        seconds: float,
    ) -> WorkerConnection | None:
        """One job, with up to ATTEMPTS workers if they die; returns the slot's worker afterwards.

        The job's deadline is absolute: set once here, and moved only by the time spent starting
        a replacement worker (the grader's own cost, not the student's)."""
        run = SandboxRun(submission, mode=mode, job=job_id, track=track)
        budget = Budget(self.limits.result_bytes)
        started = time.monotonic()
        deadline = started + seconds + GRACE_SECONDS
        remaining = list(probes)
        follow = job_id in self._decisions
        sent = done = False  # the job went to the worker; its answer ended with "done"
        try:
            for _ in range(ATTEMPTS):
                if self._kill_now or time.monotonic() >= deadline - GRACE_SECONDS:
                    break
                if worker is None or not worker.alive():
                    spawned = time.monotonic()
                    worker = None
                    worker = self._spawn(slot)
                    deadline += time.monotonic() - spawned
                job = job_record(job_id, submission, remaining, mode, self._job_limits(deadline, budget), track)
                if follow:
                    job["follow"] = True
                sent = True
                done = worker.run(job, run.results, budget, deadline, self.limits.payload_bytes, run.digests)
                remaining = [name for name in remaining if name not in run.results]
                if done or not remaining:
                    break
                worker.kill()  # died, hung or spoke garbage: a fresh worker retries the rest
                worker = None
            if follow and worker is not None and sent and not done:
                worker.kill()  # its watcher is in no known state: what follows goes to a fresh worker
                worker = None
            out_of_time = time.monotonic() >= deadline - GRACE_SECONDS
            for name in remaining:
                run.results[name] = (
                    ProbeError(kind="timeout", key="sandbox.timeout")
                    if out_of_time
                    else ProbeError(kind="crash", key="sandbox.worker-died")
                )
        except Exception as exc:  # noqa: BLE001 - a slot must always answer, or the run hangs
            for name in probes:
                run.results.setdefault(
                    name, ProbeError(kind="crash", key="sandbox.worker-died", params={"reason": str(exc)[:200]})
                )
            if worker is not None:
                worker.kill()
            worker = None
        # the time used: from the start to now, less what starting replacement workers took
        run.seconds = min(seconds, max(0.0, time.monotonic() - (deadline - GRACE_SECONDS - seconds)))
        self._deliver(run)
        return worker

    def _follow(
        self,
        slot: int,
        worker: WorkerConnection | None,
        decision: tuple | None,
        job_id: int,
        submission: Submission,
        probes: list[str],
        mode: str,
        track: str,
        seconds: float,
    ) -> WorkerConnection | None:
        """What follows a job to follow (see `submit`): the next job of the same submission, which
        the worker's watcher (if still there) runs in the job's parked child, or its end."""
        if decision is not None:
            next_id, next_probes, next_mode, next_seconds = decision
            return self._run_job(slot, worker, next_id, submission, next_probes, next_mode, track, next_seconds)
        if worker is not None and not self._kill_now and not worker.end(job_id, time.monotonic() + GRACE_SECONDS):
            worker.kill()
            worker = None
        return worker

    def _deliver(self, run: SandboxRun) -> None:
        """Hand a finished run to `results()`, waiting while `jobs` runs are already waiting there."""
        while not self._closed:
            try:
                self._results.put(run, timeout=0.5)
                return
            except queue.Full:
                continue
