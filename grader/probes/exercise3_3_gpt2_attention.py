"""Probes of exercise3_3_gpt2_attention: MultiHeadAttention with the smallest GPT-2's sizes.

Kept cheap: one construction per probe and a 4-token forward pass (never 1024 tokens). Building
GPT-2 small's attention costs milliseconds (2.4M parameters, a 1024 x 1024 mask), so:
- its nn.Linear layers are built zero-filled instead of randomly initialised (about 7 ms per
  submission): `configuration` reads sizes only and `forward` overwrites every weight it uses
  with known ones, so the random values never reach a result (a bias the exercise does not ask
  for stays zero);
- the known weights and inputs of `forward` are made once per process (`prepare`, called by the
  sandbox's warm worker before it forks), and only read afterwards (the code under test gets
  copies);
- the module `configuration` built is handed to the `forward` probe that follows it in the same
  process for the same namespace. Both probes start from the same global state (seed 0), so that
  module is exactly what `forward` would have built itself.
"""

from __future__ import annotations

import torch

from grader.probes import (
    attr,
    function,
    linear_layers_zero_filled,
    linear_weights,
    probe,
    qkv_weights,
    randn,
    tensor,
    transplant,
)

MODULE = "exercise3_3_gpt2_attention"

_PREPARED: dict[str, object] = {}
_BUILT: list = []  # [(namespace, module)] from the last `configuration`, taken by `forward`


def prepare() -> dict:
    """The `forward` probe's known weights and inputs, made once per process."""
    if not _PREPARED:
        x = randn(1, 4, 768, seed=901)
        changed = x.clone()
        changed[:, 2:] = randn(1, 2, 768, seed=902)
        _PREPARED.update(
            weights=qkv_weights(768, 768, seed=900) | linear_weights("out_proj", 768, 768, bias=True, seed=950),
            x=x,
            changed=changed,
        )
    return _PREPARED


def _build(ns):
    build = function(ns, MODULE, "build_gpt2_small_attention")
    with linear_layers_zero_filled():
        return build()


@probe(MODULE)
def configuration(ns):
    # Sizes only. Built for real: the meta device would need torch's lazily imported meta kernels
    # (torch._refs, sympy, torch._dynamo: a second per process), which a sandboxed child cannot read.
    _BUILT.clear()
    module = _build(ns)
    _BUILT.append((ns, module))
    values = {name: attr(module, name) for name in ("d_out", "num_heads", "head_dim")}
    values = {name: v if type(v) is int else repr(v)[:40] for name, v in values.items()}
    buffers = dict(module.named_buffers())
    mask = buffers.get("mask", getattr(module, "mask", None))
    values["mask_size"] = list(mask.shape[-2:]) if isinstance(mask, torch.Tensor) else []
    values["qkv_bias"] = [
        isinstance(getattr(attr(module, n), "bias", None), torch.Tensor) for n in ("W_query", "W_key", "W_value")
    ]
    values["num_parameters"] = sum(p.numel() for p in module.parameters())
    return values


@probe(MODULE)
def forward(ns):
    """Known weights, a (1, 4, 768) input, and the same input with its last two tokens changed."""
    built, module = _BUILT.pop() if _BUILT else (None, None)
    _BUILT.clear()
    if built is not ns or not isinstance(module, torch.nn.Module):
        module = _build(ns)
    return _forward(module, "build_gpt2_small_attention()(x)")


@probe(MODULE)
def own_class_forward(ns):
    """`forward` with the student's own MultiHeadAttention (3.6) in GPT-2 small's configuration:
    where it differs from the reference's, Exercise 3.3 is judged against it (a mistake of 3.6 is
    paid for in 3.6 only)."""
    cls = function(ns, "sec3_6_multi_head_attention", "MultiHeadAttention")
    with linear_layers_zero_filled():
        module = cls(768, 768, 1024, 0.0, num_heads=12)
    return _forward(module, "MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)(x)")


def _forward(module, what: str) -> dict:
    prepared = prepare()
    transplant(module, prepared["weights"])
    module.eval()
    with torch.no_grad():
        out = tensor(module(prepared["x"].clone()), what)
        out_changed = tensor(module(prepared["changed"].clone()), what)
    return {"out": out, "changed": out_changed, "keep": 2}
