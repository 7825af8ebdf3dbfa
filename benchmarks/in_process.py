"""Probes, traces and the grading stages of a submission run in this process: for the kit's own code only.

The benchmark's mutants and the kit's test fixtures are our own code, so they may run in the
trusted process (fast, no sandbox start-up). Real submissions never come here: their probes and
traces run in the sandbox. The stages are the grading run's own (grader.run.stages).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from grader.answer_key import AnswerKey
from grader.diagnosis import Diagnoser
from grader.probe_outputs import ProbeOutputs, ProbeResults
from grader.probes import PROBES, load_all
from grader.probes.tracer import traced
from grader.records import MODULES, Submission, TestOutcome
from grader.run import stages
from grader.sandbox import driver
from grader.sandbox.boundary import result_from_record
from grader.sandbox.runs import SandboxRun
from grader.suites.hidden_suites import HiddenSuites, collect


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


def trace_probes(directory: Path, probes: list[str] | tuple[str, ...]) -> dict[str, dict]:
    """The tracer's documents of `probes` run on the submission in `directory` (see grader.probes.tracer)."""
    load_all()
    with student_modules(directory) as ns:
        documents = {}
        for name in probes:  # each on its own, as the sandbox traces it: nothing built by another probe
            alone = driver.StudentNamespace(ns.directory)
            documents[name] = traced(driver.run_probe, PROBES[name], alone, alone.directory)["trace"]
        return documents


def read_sources(directory: Path) -> dict[str, str]:
    return {
        name: (directory / f"{name}.py").read_text(encoding="utf-8")
        for name in MODULES
        if (directory / f"{name}.py").is_file()
    }


class InProcess:
    """The answer key, a diagnoser of the reference and the collected suites, made once."""

    def __init__(self) -> None:
        torch.set_num_threads(1)  # small probes: a second thread only waits (and slows down a busy machine)
        self.answer_key = AnswerKey()
        self.reference = self.answer_key.reference()
        self.diagnoser = Diagnoser(self.reference, self.answer_key.variants)
        self.suites: HiddenSuites = collect()

    def graded(self, directory: Path) -> stages.Graded:
        """The suites' outcomes on the submission in `directory`, undiagnosed."""
        sources = read_sources(directory)
        submission = Submission(
            directory.name, directory, sources, hashlib.sha256(repr(sorted(sources.items())).encode()).hexdigest()
        )
        run = SandboxRun(submission, run_probes(directory))
        return stages.outcomes(run, stages.probe_outputs(run), self.suites, self.reference)

    def with_diagnoses(self, graded: stages.Graded, trace: bool = True) -> tuple[TestOutcome, ...]:
        """The outcomes as the grading run diagnoses them, with traces of what failed (`trace`)."""
        plan = stages.trace_plan(graded, self.diagnoser, self.suites) if trace else stages.TracePlan(shared={})
        documents = trace_probes(graded.submission.path, plan.probes) if plan.probes else {}
        return stages.with_diagnoses(graded, self.diagnoser, self.suites, documents, plan)[0]


def grade_each(directories: list[Path], check: Callable[..., None]) -> None:
    """The hidden suites on each submission in `directories`, all in this process:
    `check(diagnoser, directory, outputs, outcomes, uses)` receives each one's outcomes, undiagnosed,
    with a `Diagnoser` of the reference and the tests' `uses` markers."""
    grading = InProcess()
    for directory in directories:
        graded = grading.graded(directory)
        check(grading.diagnoser, directory, graded.outputs, list(graded.outcomes), grading.suites.uses)


def grade_in_process(
    directories: list[Path], sink: Callable[[Path, ProbeOutputs, list[TestOutcome]], None], trace: bool = True
) -> None:
    """The hidden suites and the diagnosis (with traces of what failed) on each submission, all in
    this process; `sink(directory, outputs, outcomes)` receives each one's diagnosed outcomes."""
    grading = InProcess()
    for directory in directories:
        graded = grading.graded(directory)
        sink(directory, graded.outputs, list(grading.with_diagnoses(graded, trace)))
