"""Behaviour signatures: misconceptions that show in a probe's outputs even where values cannot match.

- NaN in the first token's outputs, where the reference has none, and none (nor infinity) in the
  others': the first token's row of scores was entirely masked, so the mask hides the diagonal too
  (mask-includes-diagonal);
- two calls in eval mode on the same input giving different outputs: dropout is active after
  model.eval() (dropout-misplaced);
- a wrapper whose own parameter count is 0 while its heads have parameters: the heads are not
  registered (heads-not-registered);
- qkv_bias=True without bias parameters, or biases without qkv_bias (qkv-bias-ignored).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from grader.probe_outputs import ProbeOutputs
from grader.records import TestOutcome
from grader.sections import SECTIONS

# probes that call a module twice in eval mode on the same input: (first, second) output keys
REPEATED_EVAL = {
    "sec3_5_causal_attention:eval_mode": ("first", "second"),
    "sec3_6_multi_head_attention:mha_dropout": ("eval_a", "eval_b"),
}
ATTENTION_MODULES = tuple(s.module for s in SECTIONS if s.causal)  # causal attention: a NaN first token is telling


def _tensors(value: Any, key: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    if type(value) is torch.Tensor:
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _tensors(item, f"{key}.{name}" if key else name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _tensors(item, f"{key}[{index}]")


def first_token_nan(got: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """NaN where the reference is finite, all of it at the first token of (b, T, d) outputs, and the
    later tokens finite where the reference's are."""
    expected = dict(_tensors(want))
    seen = False
    for key, value in _tensors(got):
        reference = expected.get(key)
        if reference is None or value.shape != reference.shape or not value.is_floating_point() or value.dim() != 3:
            continue
        nan = torch.isnan(value) & ~torch.isnan(reference)
        if not bool(nan.any()):
            continue
        if not bool(nan[:, 0].all()) or bool(nan[:, 1:].any()):
            return False  # NaN elsewhere than the first token: not a fully masked first row
        if bool((~torch.isfinite(value[:, 1:]) & torch.isfinite(reference[:, 1:])).any()):
            return False  # infinity at later tokens: -inf scores used as weights, not a fully masked row
        seen = True
    return seen


def signatures(outcome: TestOutcome, student: ProbeOutputs, reference: ProbeOutputs) -> list[str]:
    """The misconceptions the test's probes show by behaviour, in a fixed order."""
    found: list[str] = []
    for probe in outcome.probes:
        got, want = student.outputs(probe), reference.outputs(probe)
        if got is None or want is None:
            continue
        module = probe.split(":")[0]
        if module in ATTENTION_MODULES and first_token_nan(got, want):
            found.append("mask-includes-diagonal")
        if probe in REPEATED_EVAL:
            a, b = (got.get(k) for k in REPEATED_EVAL[probe])
            if (
                type(a) is torch.Tensor
                and type(b) is torch.Tensor
                and a.shape == b.shape
                and not torch.equal(a.nan_to_num(), b.nan_to_num())
            ):
                found.append("dropout-misplaced")
        if probe == "sec3_6_multi_head_attention:wrapper_parameters":
            wrapper, heads = got.get("wrapper_parameters"), got.get("head_parameters")
            if type(wrapper) is int and type(heads) is int and wrapper == 0 < heads:
                found.append("heads-not-registered")
        default, asked = got.get("default_bias"), got.get("with_bias")
        if (
            isinstance(default, list)
            and isinstance(asked, list)
            and (any(default) or not all(asked))
            and all(type(b) is bool for b in default + asked)
        ):
            found.append("qkv-bias-ignored")
        names, expected = got.get("parameters"), want.get("parameters")
        if isinstance(names, list) and isinstance(expected, list) and all(type(n) is str for n in names + expected):
            biases = {n for n in names if n.endswith(".bias")}
            wanted = {n for n in expected if n.endswith(".bias")}
            if biases != wanted and {n for n in names if not n.endswith(".bias")} == {
                n for n in expected if not n.endswith(".bias")
            }:
                found.append("qkv-bias-ignored")
    return list(dict.fromkeys(found))


# the probes that read an exercise's configuration (sizes, heads, biases, parameter counts)
CONFIGURATION_PROBES = ("exercise3_2_two_dim_output:structure", "exercise3_3_gpt2_attention:configuration")


# how the class an exercise configures handles qkv_bias, by its own probe: (probe, check of its outputs)
BIAS_PROBES = {
    "exercise3_3_gpt2_attention": "sec3_6_multi_head_attention:mha_qkv_bias",
    "exercise3_2_two_dim_output": "sec3_5_causal_attention:qkv_bias",
}
BIAS_FIELDS = ("qkv_bias", "num_parameters")  # what biases the class creates wrongly change


def class_mishandles_bias(module: str, student: ProbeOutputs, reference: ProbeOutputs) -> bool:
    """The class that exercise `module` configures creates biases when qkv_bias is off, or none when
    it is on (its own qkv_bias probe says so): a bias difference in what the exercise built is the class's."""
    probe = BIAS_PROBES.get(module)
    got, want = (student.outputs(probe), reference.outputs(probe)) if probe else (None, None)
    if not got or not want:
        return False
    default, asked = got.get("default_bias"), got.get("with_bias")
    if isinstance(default, list) and isinstance(asked, list):
        return any(default) or not all(asked)
    return got.get("parameters") != want.get("parameters")


def bias_charged_to_class(
    outcome: TestOutcome, outcomes: list[TestOutcome], student: ProbeOutputs, reference: ProbeOutputs
) -> str | None:
    """The class module an exercise's failing test is charged to: the class fails tests of its own and
    the exercise asked for the right sizes, heads and biases (what it built differs only in what the
    class's own code decides: its parameter count, a layer more or less, and the biases when the class
    mishandles qkv_bias). None otherwise."""
    probe = BIAS_PROBES.get(outcome.module)
    owner = probe.split(":")[0] if probe else None
    if owner is None or not any(o.module == owner and o.status != "passed" and not o.blocked_by for o in outcomes):
        return None
    differs = _differs_in(outcome, student, reference)
    if class_mishandles_bias(outcome.module, student, reference) and not differs - set(BIAS_FIELDS):
        return owner
    return owner if differs == {"num_parameters"} else None


def _differs_in(outcome: TestOutcome, student: ProbeOutputs, reference: ProbeOutputs) -> set[str]:
    """The fields of the exercise's configuration probe that differ from the reference's."""
    differs: set[str] = set()
    for probe in CONFIGURATION_PROBES:
        got, want = student.outputs(probe), reference.outputs(probe)
        if probe.split(":")[0] == outcome.module and got is not None and want is not None:
            differs |= {k for k in set(got) | set(want) if got.get(k) != want.get(k)}
    return differs


def configuration_differs(outcome: TestOutcome, student: ProbeOutputs, reference: ProbeOutputs) -> bool:
    """An exercise built a module whose sizes, heads or biases differ from those asked for (seen by
    its module's configuration probe, whichever test failed); biases and the parameter count only
    when the class it configures handles qkv_bias right."""
    ignored = BIAS_FIELDS if class_mishandles_bias(outcome.module, student, reference) else ()
    return bool(_differs_in(outcome, student, reference) - set(ignored))
