"""The benchmark's baseline: the hidden suites run by plain pytest against one submission, in process.

    python -m pytest grader/suites/hidden -p grader.baseline --submission DIR

This is how a course usually autogrades (one fresh pytest process per submission, student code
imported into it), kept only to measure what the warm sandboxed workers save. It is NOT safe:
the student's code shares a process with the answer key and the hidden tests.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.suites.plugin import register_markers
from grader.suites.seam import Seam, in_process_student, reference_results, submission_track


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--submission", type=Path, required=True, help="the submission folder to grade")


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)


@pytest.fixture(scope="session")
def reference(pytestconfig: pytest.Config) -> Seam:
    track = submission_track(pytestconfig.getoption("--submission").resolve())
    if track == "pytorch":
        return Seam(reference_results())
    from grader.suites.tracks import TrackBaselines  # the seeded probes against the track's own reference

    return TrackBaselines(Seam(reference_results()), []).reference(track)


@pytest.fixture(scope="session")
def _student_seam(pytestconfig: pytest.Config) -> Seam:
    return in_process_student(pytestconfig.getoption("--submission").resolve())


@pytest.fixture
def student(_student_seam: Seam) -> Seam:
    return _student_seam
