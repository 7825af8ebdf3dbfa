"""Probes of exercise3_3_gpt2_attention: MultiHeadAttention with the smallest GPT-2's sizes.

Kept cheap: one construction per probe and a 4-token forward pass (never 1024 tokens)."""
from __future__ import annotations

import torch

from grader.probes import attr, function, linear_weights, probe, qkv_weights, randn, tensor, transplant

MODULE = "exercise3_3_gpt2_attention"


def _build(ns):
    return function(ns, MODULE, "build_gpt2_small_attention")()


@probe(MODULE)
def configuration(ns):
    # Sizes only: built on the meta device (no memory, no initialisation) when the code allows it.
    try:
        with torch.device("meta"):
            module = _build(ns)
    except Exception:  # noqa: BLE001 - code that cannot run on meta is built for real (errors show there)
        module = _build(ns)
    values = {name: attr(module, name) for name in ("d_out", "num_heads", "head_dim")}
    values = {name: v if type(v) is int else repr(v)[:40] for name, v in values.items()}
    buffers = dict(module.named_buffers())
    mask = buffers.get("mask", getattr(module, "mask", None))
    values["mask_size"] = list(mask.shape[-2:]) if isinstance(mask, torch.Tensor) else []
    values["qkv_bias"] = [isinstance(getattr(attr(module, n), "bias", None), torch.Tensor)
                          for n in ("W_query", "W_key", "W_value")]
    values["num_parameters"] = sum(p.numel() for p in module.parameters())
    return values


@probe(MODULE)
def forward(ns):
    """Known weights, a (1, 4, 768) input, and the same input with its last two tokens changed."""
    module = _build(ns)
    weights = qkv_weights(768, 768, seed=900) | linear_weights("out_proj", 768, 768, bias=True, seed=950)
    transplant(module, weights)
    module.eval()
    x = randn(1, 4, 768, seed=901)
    changed = x.clone()
    changed[:, 2:] = randn(1, 2, 768, seed=902)
    with torch.no_grad():
        out = tensor(module(x), "build_gpt2_small_attention()(x)")
        out_changed = tensor(module(changed), "build_gpt2_small_attention()(x)")
    return {"out": out, "changed": out_changed, "keep": 2}
