"""A test double of the sandbox pool that runs the probes in the test process, with the
framework adapter of each submission's track: the whole trusted grading path (runner, suites,
diagnosis, reports) on MindSpore submissions without the sandbox. Student code shares the
process with the tests: only for the kit's own, trusted test submissions."""
from __future__ import annotations

import sys
from pathlib import Path

from grader.frameworks import namespace_for, track_of
from grader.records import MODULES, IntegrityNote, Submission
from grader.sandbox import driver
from grader.sandbox.pool import SandboxRun
from grader.suites.seam import run_in_process


def probe_results(directory: Path, track: str | None = None, probes: list[str] | None = None) -> dict:
    """Every probe's results for the submission in `directory` (imported into this process)."""
    for module in MODULES:
        sys.modules.pop(module, None)
    ns = driver.StudentNamespace(str(directory))
    if track is None:
        track = track_of({p.stem: p.read_text() for p in Path(directory).glob("*.py")})
    try:
        return run_in_process(namespace_for(track, ns), ns.directory, probes)
    finally:
        if ns.directory in sys.path:
            sys.path.remove(ns.directory)
        for module in MODULES:
            sys.modules.pop(module, None)


class InProcessPool:
    """Stands in for `grader.sandbox.pool.SandboxPool` (same constructor and API)."""

    def __init__(self, jobs: int = 1, limits: object = None, hide: object = (), probes: object = ()):
        self.runs: list[SandboxRun] = []

    def protections(self) -> list[IntegrityNote]:
        return []

    def submit(self, submission: Submission, probes: list[str] | None = None) -> None:
        self.runs.append(SandboxRun(submission, probe_results(submission.path, track_of(submission.sources), probes)))

    def results(self):
        while self.runs:
            yield self.runs.pop(0)

    def __enter__(self) -> "InProcessPool":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def grade_in_process(path: Path, out_dir: Path, lang: str = "en"):
    """`grader.runner.grade` with the in-process pool."""
    from grader import runner

    original = runner.SandboxPool
    runner.SandboxPool = InProcessPool
    try:
        return runner.grade(path, out_dir, jobs=1, lang=lang, force=True)
    finally:
        runner.SandboxPool = original
