"""One sandbox pool per track of a class: PyTorch submissions go to workers warmed up for torch,
MindSpore submissions to workers warmed up for MindSpore (`warmup.FLAVOURS`), and their results
come back as one stream, in the order they finish.

A track's workers start only when the class has submissions of that track (`workers`): a
PyTorch-only class starts no MindSpore worker, which would cost ~5 s and ~600 MB to warm up.
Same API as `SandboxPool` (submit, follow_up, release, results, protections, context manager).

A submission the sandbox cannot take (its track's framework is not installed, or routing it
failed) is never run: its run comes back in the same stream, with `SandboxRun.not_run` saying why.
"""

from __future__ import annotations

import collections
import itertools
import logging
import queue
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from grader import frameworks
from grader.frameworks import MINDSPORE, PYTORCH, TRACKS, track_of
from grader.intake.printable import printable
from grader.records import IntegrityNote, Submission
from grader.sandbox.pool import SandboxPool
from grader.sandbox.runs import Limits, NotRun, SandboxRun
from grader.sandbox.slots import SLOTS_PER_RUN

log = logging.getLogger("grader.sandbox")

# The flavour of worker that grades each track (also known to `warmup`, which runs in the sandbox).
FLAVOUR_OF_TRACK = {"pytorch": "torch", "mindspore": "mindspore"}
# Tracks whose children can park after a job to follow (SandboxPool.submit): a MindSpore child has
# the framework's own threads once it ran an op, so it is never kept, and its slot would wait for
# nothing; its follow-ups run as jobs of their own.
PARKING_TRACKS = {PYTORCH}
# Each track whose framework is an extra of the kit: why its submissions are not run without it.
MISSING = {MINDSPORE: NotRun(IntegrityNote("grader.mindspore-missing", "mindspore"), "internal.mindspore-missing")}


def planned_track(sources: Mapping[str, str]) -> str:
    """The track to start workers for: `track_of`, or PyTorch where routing fails (`submit` makes
    that failure the submission's own note)."""
    try:
        return track_of(sources)
    except Exception:  # noqa: BLE001
        return PYTORCH


class TrackPools:
    """`workers[track]` warm workers per track (tracks with none start no pool); `submissions[track]`,
    when known, how many submissions the track's pool will grade (`SandboxPool`'s `forks`)."""

    def __init__(
        self,
        workers: dict[str, int],
        limits: Limits = Limits(),
        hide: Sequence[Path] = (),
        probes: Sequence[str] = (),
        submissions: dict[str, int] | None = None,
    ):
        unknown = set(workers) - set(TRACKS)
        if unknown:
            raise ValueError(f"unknown tracks: {', '.join(sorted(unknown))}")
        counts = {track: n for track, n in workers.items() if n > 0 and frameworks.available(track)} or {PYTORCH: 1}
        if sum(counts.values()) > SLOTS_PER_RUN:
            raise ValueError(f"at most {SLOTS_PER_RUN} workers per grading run")
        self.limits, self.hide, self.probes = limits, list(hide), list(probes)
        self.submissions = dict(submissions or {})  # per track, when known: how warm its workers need to be
        self._results: queue.Queue = queue.Queue(maxsize=sum(counts.values()))
        self._next_slot = 0
        self._ids = itertools.count(1)  # job ids unique across the tracks' pools: one results stream
        self._pending = 0
        self._not_run: collections.deque[SandboxRun] = collections.deque()  # delivered before any other
        self.pools: dict[str, SandboxPool] = {}
        try:
            for track, count in counts.items():
                self._start(track, count)
        except BaseException:
            self.close(kill=True)
            raise

    def _start(self, track: str, count: int) -> SandboxPool:
        count = min(count, SLOTS_PER_RUN - self._next_slot)
        if count <= 0:
            raise RuntimeError("no sandbox slot left for another track's workers")
        pool = SandboxPool(
            count,
            self.limits,
            hide=self.hide,
            probes=self.probes,
            flavour=FLAVOUR_OF_TRACK[track],
            results=self._results,
            first_slot=self._next_slot,
            ids=self._ids,
            forks=-(-self.submissions[track] // count) if self.submissions.get(track) else 0,
        )
        self._next_slot += count
        self.pools[track] = pool
        return pool

    @property
    def jobs(self) -> int:
        """Workers of all tracks."""
        return sum(pool.jobs for pool in self.pools.values())

    def protections(self) -> list[IntegrityNote]:
        notes: list[IntegrityNote] = []
        for pool in self.pools.values():
            notes += [note for note in pool.protections() if note not in notes]
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
        """Queue a job on the pool of `track` (default: the one the submission's sources show),
        started now if the class was thought to have none of that track (a submission changed
        between two reads). A job the sandbox cannot take comes back unrun (`SandboxRun.not_run`)."""
        stage = "routing"
        try:
            track = track or track_of(submission.sources)
            if not frameworks.available(track):
                return self._unrun(submission, mode, track, MISSING[track])
            stage = "sandbox"
            pool = self.pools.get(track) or self._start(track, 1)
        except Exception as exc:
            log.exception("%s of %s failed", stage, printable(submission.name))
            return self._unrun(
                submission,
                mode,
                track or PYTORCH,
                NotRun(IntegrityNote("grader.failed", f"{stage}: {type(exc).__name__}")),
            )
        job = pool.submit(submission, probes, mode, track, seconds, follow and track in PARKING_TRACKS)
        self._pending += 1
        return job

    def _unrun(self, submission: Submission, mode: str, track: str, why: NotRun) -> int:
        """A job that no sandbox runs: its run is the next one `results()` yields."""
        job = next(self._ids)
        self._not_run.append(SandboxRun(submission, mode=mode, job=job, track=track, not_run=why))
        self._pending += 1
        return job

    def follow_up(self, run: SandboxRun, probes: list[str], mode: str = "trace", seconds: float | None = None) -> int:
        """`SandboxPool.follow_up` on the pool that ran `run`."""
        pool = self.pools.get(run.track) or self._start(run.track, 1)
        job = pool.follow_up(run, probes, mode, seconds)
        self._pending += 1
        return job

    def release(self, run: SandboxRun) -> None:
        """`SandboxPool.release` on the pool that ran `run`."""
        if run.track in self.pools:
            self.pools[run.track].release(run)

    def results(self) -> Iterator[SandboxRun]:
        while self._pending:
            run = self._not_run.popleft() if self._not_run else self._results.get()
            self._pending -= 1
            yield run

    def ready(self) -> bool:
        """Whether a finished run is waiting to be taken from `results()`."""
        return bool(self._not_run) or not self._results.empty()

    def close(self, kill: bool = False) -> None:
        for pool in self.pools.values():
            pool.close(kill=kill)

    def __enter__(self) -> TrackPools:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(kill=exc_type is not None)
