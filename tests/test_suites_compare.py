"""What the suites' comparisons leave behind: a check that fails holds no student output in a
reference cycle (the trusted process collects cycles rarely during a class run: grader.run.grading)."""

from __future__ import annotations

import gc
import warnings
import weakref

import pytest
import torch

from grader.suites.compare import Mismatch, expect_cases, judged_against


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


def _complex_outputs(results: dict) -> dict:
    """The reference's outputs with every 3.5 tensor made complex (imaginary part 1)."""
    forged = dict(results)
    for probe, outputs in results.items():
        if probe.startswith("sec3_5_causal_attention:") and isinstance(outputs, dict):
            forged[probe] = {
                key: torch.complex(value.double(), torch.ones_like(value.double()))
                if isinstance(value, torch.Tensor) and value.is_floating_point()
                else value
                for key, value in outputs.items()
            }
    return forged


def test_a_complex_output_fails_its_check_saying_so_and_warns_nobody():
    """A complex output is never compared through a cast to real numbers (which drops the
    imaginary part, and printed torch's "Casting complex values to real" warning during a class
    run): its check fails with a message that says the output is complex, and no warning leaves
    the suites."""
    from grader.answer_key import reference_results
    from grader.probe_outputs import ProbeOutputs
    from grader.suites.hidden_suites import collect

    reference = reference_results()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = collect().run(ProbeOutputs(_complex_outputs(reference)), ProbeOutputs(reference))
    assert [str(w.message) for w in caught] == []
    judged = {o.name: o for o in outcomes if o.module == "sec3_5_causal_attention"}
    for name in (
        "test_causal_attention_matches_reference",
        "test_causality",
        "test_eval_mode_is_deterministic_and_dropout_free",
    ):
        outcome = judged[name]
        assert outcome.status == "failed" and outcome.detail.key == "mismatch.complex", (name, outcome.detail)


@pytest.mark.parametrize("own_value", [0.0, 0.7], ids=["zeros", "constant"])
def test_own_outputs_that_do_not_vary_are_no_evidence(own_value):
    """Later code that gives exactly what the student's own earlier class gives passes only when those
    outputs vary across tokens and sequences: a constant is judged against the reference."""
    expected = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1))
    own = torch.full_like(expected, own_value)
    assert judged_against(own.clone(), expected, own) is expected
    varying = expected * 2
    assert judged_against(varying.clone(), expected, varying) is None
