"""Probes and traces of a submission run in this process: for the kit's own code only.

The benchmark's mutants and the kit's test fixtures are our own code, so they may run in the
trusted process (fast, no sandbox start-up). Real submissions never come here: their traces come
from the sandbox.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from grader.probes import PROBES, load_all
from grader.probes.trace import traced
from grader.records import MODULES, ProbeError, TestOutcome
from grader.sandbox import driver
from grader.sandbox.pool import result_from_record
from grader.suites.seam import ProbeResults, Seam


@contextmanager
def student_modules(directory: Path) -> Iterator[driver.StudentNamespace]:
    """The submission's modules importable by their plain names, and forgotten afterwards."""
    for name in MODULES:
        sys.modules.pop(name, None)
    meta_path = list(sys.meta_path)
    ns = driver.StudentNamespace(str(directory))
    try:
        yield ns
    finally:
        for name in MODULES:
            sys.modules.pop(name, None)
        sys.meta_path[:] = meta_path
        if ns.directory in sys.path:
            sys.path.remove(ns.directory)


def run_probes(directory: Path, probes: list[str] | None = None) -> ProbeResults:
    """Every probe's result (or the given ones') for the submission in `directory`."""
    load_all()
    names = probes if probes is not None else sorted(PROBES)
    with student_modules(directory) as ns:
        return {name: result_from_record(driver.run_probe(PROBES[name], ns, ns.directory)) for name in names}


def trace_probes(directory: Path, probes: list[str]) -> dict[str, dict]:
    """The tracer's documents of `probes` run on the submission in `directory` (see grader.probes.trace)."""
    load_all()
    with student_modules(directory) as ns:
        documents = {}
        for name in probes:  # each on its own, as the sandbox traces it: nothing built by another probe
            alone = driver.StudentNamespace(ns.directory)
            documents[name] = traced(driver.run_probe, PROBES[name], alone, alone.directory)["trace"]
        return documents


def read_sources(directory: Path) -> dict[str, str]:
    return {name: (directory / f"{name}.py").read_text(encoding="utf-8")
            for name in MODULES if (directory / f"{name}.py").is_file()}


def grade_each(directories: list[Path], check: Callable[..., None]) -> None:
    """The hidden suites on each submission in `directories`, all in this process:
    `check(diagnoser, directory, seam, outcomes, uses)` receives each one's outcomes, undiagnosed,
    with a `Diagnoser` of the reference and the tests' `uses` markers."""
    from grader.diagnosis import Diagnoser, variant_runs
    from grader.suites.plugin import GradingPlugin, run_suites
    from grader.suites.seam import Seam, reference_results

    import torch

    torch.set_num_threads(1)  # small probes: a second thread only waits (and slows down a busy machine)
    reference = Seam(reference_results())
    diagnoser = Diagnoser(reference, variant_runs())

    def source():
        for directory in directories:
            yield directory, Seam(run_probes(directory))

    plugin = GradingPlugin(reference, source(), lambda directory, seam, outcomes: check(
        diagnoser, directory, seam, outcomes, {info.id: info.uses for info in plugin.infos}))
    run_suites(plugin)


def grade_in_process(directories: list[Path], sink: Callable[[Path, Seam, list[TestOutcome]], None],
                     trace: bool = True) -> None:
    """The hidden suites and the diagnosis (with traces of what failed) on each submission, all in
    this process; `sink(directory, seam, outcomes)` receives each one's diagnosed outcomes."""

    def diagnose(diagnoser, directory: Path, seam: Seam, outcomes: list[TestOutcome], uses) -> None:
        sources = read_sources(directory)
        for outcome in outcomes:
            if outcome.status != "passed" and outcome.module not in sources and outcome.error is not None:
                outcome.error = ProbeError(kind="import", key="import.missing", module=outcome.module,
                                           params={"module": outcome.module})
                outcome.blocked_by = None
        probes, shared = diagnoser.trace_plan(outcomes, seam, uses, sources) if trace else ([], {})
        documents = trace_probes(directory, probes) if probes else {}
        diagnoser.diagnose_submission(outcomes, seam, uses, sources, documents, shared)
        sink(directory, seam, outcomes)

    grade_each(directories, diagnose)
