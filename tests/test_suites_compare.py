"""What the suites' comparisons leave behind: a check that fails holds no student output in a
reference cycle (the trusted process collects cycles rarely during a class run: grader.run.grading)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from grader.suites.compare import Mismatch, expect_cases


def test_a_failing_case_is_freed_with_its_check_without_the_garbage_collector():
    """expect_cases once kept each failing case's exception, whose traceback holds the check's frame
    (and the cases, the student's outputs) in a cycle: only a collection freed them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        student = torch.ones(3)
        kept = weakref.ref(student)
        cases = [
            (student, torch.zeros(3), "weights", "one input"),
            (torch.ones(2), torch.ones(2), "weights", "another"),
        ]
        del student
        try:
            expect_cases(cases)
        except Mismatch:
            pass
        else:
            pytest.fail("the first case differs: the check fails")
        del cases
        assert kept() is None
    finally:
        if enabled:
            gc.enable()
