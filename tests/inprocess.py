"""Probes run in the test process with the framework adapter of a submission's track: for tests
of the adapter and the references on the kit's own, trusted code (students' code is graded only
in the sandbox)."""

from __future__ import annotations

import sys
from pathlib import Path

from grader.frameworks import namespace_for, track_of
from grader.records import MODULES
from grader.reference_code import run_in_process
from grader.sandbox import driver


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
