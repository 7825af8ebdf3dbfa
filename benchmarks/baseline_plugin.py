"""The benchmark's baseline: the hidden suites run by plain pytest against one submission, in process.

    python -m pytest grader/suites/hidden -p baseline_plugin --submission DIR   (benchmarks/ on PYTHONPATH)

This is how a course usually autogrades (one fresh pytest process per submission, student code
imported into it), kept only to measure what the warm sandboxed workers save. It is NOT safe:
the student's code shares a process with the answer key and the hidden tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.answer_key import AnswerKey
from grader.frameworks import namespace_for, track_of
from grader.probe_outputs import ProbeOutputs
from grader.reference_code import run_in_process
from grader.sandbox import driver
from grader.suites.hidden_suites import register_markers


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--submission", type=Path, required=True, help="the submission folder to grade")


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)


def _track(directory: Path) -> str:
    return track_of({path.stem: path.read_text(encoding="utf-8", errors="replace") for path in directory.glob("*.py")})


@pytest.fixture(scope="session")
def reference(pytestconfig: pytest.Config) -> ProbeOutputs:
    return AnswerKey().reference(_track(pytestconfig.getoption("--submission").resolve()))


@pytest.fixture(scope="session")
def _student_outputs(pytestconfig: pytest.Config) -> ProbeOutputs:
    """The student's modules imported into this process."""
    directory = pytestconfig.getoption("--submission").resolve()
    ns = driver.StudentNamespace(str(directory))
    try:
        return ProbeOutputs(run_in_process(namespace_for(_track(directory), ns), ns.directory))
    finally:
        sys.path.remove(ns.directory) if ns.directory in sys.path else None


@pytest.fixture
def student(_student_outputs: ProbeOutputs) -> ProbeOutputs:
    return _student_outputs
