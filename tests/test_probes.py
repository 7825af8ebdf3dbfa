"""Shortcuts the probes take for speed must never change what they measure."""

from __future__ import annotations

import pytest
import torch

from grader.probes import exercise3_3_gpt2_attention as gpt2
from grader.probes import linear_layers_zero_filled
from grader.reference_code import ModuleNamespace
from grader.sandbox.driver import reset_global_state


def run_gpt2_probes(ns) -> dict:
    reset_global_state()
    configuration = gpt2.configuration(ns)
    reset_global_state()
    forward = gpt2.forward(ns)
    return configuration | forward


def test_zero_filled_gpt2_layers_give_the_outputs_of_a_random_init(monkeypatch):
    fast = run_gpt2_probes(ModuleNamespace("solutions"))
    monkeypatch.setattr(gpt2, "linear_layers_zero_filled", lambda: __import__("contextlib").nullcontext())
    slow = run_gpt2_probes(ModuleNamespace("solutions"))
    assert fast.keys() == slow.keys()
    for name in fast:
        if isinstance(fast[name], torch.Tensor):
            torch.testing.assert_close(fast[name], slow[name], rtol=0, atol=0)
        else:
            assert fast[name] == slow[name], name
    assert fast["num_parameters"] == 2_360_064


def test_zero_filled_layers_are_zero_and_the_random_init_comes_back_even_after_an_error():
    original = torch.nn.Linear.reset_parameters
    with pytest.raises(RuntimeError), linear_layers_zero_filled():
        layer = torch.nn.Linear(5, 3)
        assert not layer.weight.any() and not layer.bias.any()
        raise RuntimeError("student code failed mid-construction")
    assert torch.nn.Linear.reset_parameters is original
    assert torch.nn.Linear(5, 3).weight.any()


def test_cpu_manual_seed_is_torch_manual_seed_on_the_cpu():
    from grader.probes import cpu_manual_seed

    torch.manual_seed(123)
    expected = (torch.rand(3, 2), torch.nn.Linear(3, 2).weight.detach())
    cpu_manual_seed(123)
    actual = (torch.rand(3, 2), torch.nn.Linear(3, 2).weight.detach())
    for e, a in zip(expected, actual):
        torch.testing.assert_close(a, e, rtol=0, atol=0)


@pytest.mark.parametrize(
    "probe",
    [
        "sec3_5_causal_attention:book_seed",
        "sec3_6_multi_head_attention:mha_book_seeded",
        "sec3_5_causal_attention:gradients",
        "sec3_3_simple_attention:attention_weights",
    ],
)
def test_a_probe_that_imports_a_module_setting_torch_defaults_runs_as_any_other(tmp_path, probe):
    """A student module that sets float64 as the default dtype and turns gradients off at import:
    the probe that imports it (here, the first to run) gets the reference's outputs, as every later
    probe does (each starts from float32 with gradients on)."""
    from grader.answer_key import reference_results
    from tests.conftest import solutions_as_submission
    from tests.inprocess import probe_results

    folder = solutions_as_submission(tmp_path / "mine")
    module = folder / f"{probe.partition(':')[0]}.py"
    module.write_text(module.read_text() + "\ntorch.set_default_dtype(torch.float64)\ntorch.set_grad_enabled(False)\n")
    try:
        got = probe_results(folder, "pytorch", [probe])[probe]
    finally:
        reset_global_state()
    want = reference_results()[probe]
    assert isinstance(got, dict), got
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype, key
            torch.testing.assert_close(got[key], value)
