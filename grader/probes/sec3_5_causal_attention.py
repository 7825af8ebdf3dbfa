"""Probes of sec3_5_causal_attention: causal masks, dropout and the CausalAttention class (book 3.5).

The CausalAttention probes use context_length = 7 with sequences of T = 5 (or 2) tokens, so a mask
that is not cut to the sequence length fails; batches of 3 and more; a head size of 8 (d_k > 1, so
the scaling shows). Neither 6 (the book's sentence length) nor 7 is used for any other size, so a
broadcasting error naming 7 points at an uncut mask and one naming 6 at the book's hard-coded size.
Attention weights are never graded (an implementation with F.scaled_dot_product_attention has none
to show): a forward hook on `dropout` captures them for the report's heatmap only.
"""

from __future__ import annotations

import torch

from grader.probes import (
    ContractError,
    attr,
    book_inputs,
    cpu_manual_seed,
    function,
    parameter_names,
    probe,
    randn,
    tensor,
    transplant,
)

MODULE = "sec3_5_causal_attention"
CONTEXT = 7


def book_scores() -> torch.Tensor:
    """The book's 3.5.1 scores: queries @ keys.T with the seeded 3.4 matrices (d_k = 2)."""
    generator = torch.Generator().manual_seed(123)
    w_query, w_key = (torch.rand(3, 2, generator=generator, dtype=torch.float32) for _ in range(2))
    x = book_inputs()
    return (x @ w_query) @ (x @ w_key).T  # (6, 6)


def causal_weights(d_in: int, d_out: int, *, bias: bool = False, seed: int, dtype=torch.float32) -> dict:
    weights = {}
    for i, name in enumerate(("W_query", "W_key", "W_value")):
        weights[f"{name}.weight"] = randn(d_out, d_in, seed=seed + 10 * i, dtype=dtype) / d_in**0.5 * 2
        if bias:
            weights[f"{name}.bias"] = randn(d_out, seed=seed + 10 * i + 1, dtype=dtype) * 0.5
    return weights


def causal(
    ns,
    d_in=4,
    d_out=8,
    context_length=CONTEXT,
    dropout=0.0,
    *,
    seed: int,
    bias: bool = False,
    transplanted: bool = True,
):
    cls = attr(ns.module(MODULE), "CausalAttention")
    module = (
        cls(d_in, d_out, context_length, dropout, qkv_bias=True) if bias else cls(d_in, d_out, context_length, dropout)
    )
    if transplanted:
        transplant(module, causal_weights(d_in, d_out, bias=bias, seed=seed))
    return module


def run(module, x, what: str = "CausalAttention output") -> torch.Tensor:
    return tensor(module(x), what)


@probe(MODULE)
def simple_causal_mask(ns):
    fn = function(ns, MODULE, "simple_causal_mask")
    return {f"t{t}": tensor(fn(t), "simple_causal_mask") for t in (1, 4, 6)}


@probe(MODULE)
def mask_and_renormalize(ns):
    fn = function(ns, MODULE, "mask_and_renormalize")
    return {
        "single": tensor(fn(torch.softmax(randn(5, 5, seed=501) * 2, dim=-1)), "mask_and_renormalize"),
        "batched": tensor(fn(torch.softmax(randn(2, 3, 4, 4, seed=502) * 2, dim=-1)), "mask_and_renormalize"),
    }


@probe(MODULE)
def masked_attention_weights(ns):
    fn = function(ns, MODULE, "masked_attention_weights")
    return {
        "book": tensor(fn(book_scores(), 2), "masked_attention_weights"),  # (6, 6), d_k = 2
        "single": tensor(fn(randn(5, 5, seed=511) * 3, 6), "masked_attention_weights"),  # d_k = 6
        "batched": tensor(fn(randn(3, 5, 5, seed=512) * 3, 4), "masked_attention_weights"),  # (3, 5, 5)
        "f64": tensor(fn(randn(4, 4, seed=513, dtype=torch.float64) * 3, 9), "masked_attention_weights"),
    }


@probe(MODULE)
def matches_reference(ns):
    out = {}
    module = causal(ns, seed=520)
    out["b3_t5"] = run(module, randn(3, 5, 4, seed=521))  # T < context_length
    out["b2_t7"] = run(module, randn(2, 7, 4, seed=522))  # T == context_length
    out["b1_t2"] = run(module, randn(1, 2, 4, seed=523))
    rect = causal(ns, d_in=3, d_out=5, seed=524)
    out["rect"] = run(rect, randn(3, 5, 3, seed=525))
    wide = causal(ns, seed=526).to(torch.float64)
    out["f64"] = run(wide, randn(3, 5, 4, seed=527, dtype=torch.float64))
    return out


@probe(MODULE)
def book_attention_weights(ns):
    """For the heatmap only (never graded): weights entering `dropout` on the book's sentence."""
    module = causal(ns, d_in=3, d_out=2, context_length=6, seed=530)
    captured: list[torch.Tensor] = []
    dropout = getattr(module, "dropout", None)
    if isinstance(dropout, torch.nn.Module):
        dropout.register_forward_hook(lambda m, args, output: captured.append(args[0]) if args else None)
    run(module, book_inputs().unsqueeze(0))
    if captured and isinstance(captured[0], torch.Tensor) and tuple(captured[0].shape[-2:]) == (6, 6):
        return {"weights": tensor(captured[0], "attention weights")}
    return {}


@probe(MODULE)
def book_seed(ns):
    """The book's own run: torch.manual_seed(123), CausalAttention(3, 2, 6, 0.0) on two copies."""
    cls = attr(ns.module(MODULE), "CausalAttention")
    batch = torch.stack((book_inputs(), book_inputs()))
    cpu_manual_seed(123)
    module = cls(3, 2, batch.shape[1], 0.0)
    return {"book": run(module, batch)}  # (2, 6, 2)


@probe(MODULE)
def causality(ns):
    module = causal(ns, seed=540)
    x = randn(3, 5, 4, seed=541)
    changed = x.clone()
    changed[:, 3:, :] = randn(3, 2, 4, seed=542) * 3  # tokens 4 and 5 change
    earlier = x.clone()
    earlier[:, 0, :] = randn(3, 4, seed=543) * 3  # token 1 changes: the later outputs should
    return {"original": run(module, x), "changed": run(module, changed), "earlier_changed": run(module, earlier)}


@probe(MODULE)
def batch_independence(ns):
    module = causal(ns, seed=550)
    x = randn(4, 5, 4, seed=551)
    return {"batch": run(module, x), "singles": [run(module, x[i : i + 1]) for i in range(4)]}


@probe(MODULE)
def eval_mode(ns):
    module = causal(ns, dropout=0.5, seed=560)
    module.eval()
    x = randn(3, 5, 4, seed=561)
    return {"first": run(module, x), "second": run(module, x)}


@probe(MODULE)
def train_mode(ns):
    module = causal(ns, dropout=0.5, seed=570)
    module.train()
    x = randn(8, 5, 4, seed=571)
    first, second = run(module, x), run(module, x)
    module.eval()
    return {"first": first, "second": second, "eval": run(module, x)}


@probe(MODULE)
def mask_buffer(ns):
    module = causal(ns, seed=580, transplanted=False)
    buffers = dict(module.named_buffers())
    mask = buffers.get("mask")
    info = {
        "buffers": sorted(buffers),
        "parameters": sorted(parameter_names(module)),
        "state_dict": sorted(module.state_dict()),
        "mask_dtype": None if mask is None else str(mask.dtype).removeprefix("torch."),
    }
    module.to(torch.float64)
    mask = dict(module.named_buffers()).get("mask")
    info["mask_dtype_after"] = None if mask is None else str(mask.dtype).removeprefix("torch.")
    info["mask_shape"] = None if mask is None else list(mask.shape)
    return info


@probe(MODULE)
def qkv_bias(ns):
    module = causal(ns, seed=590, bias=True)
    return {"parameters": sorted(parameter_names(module)), "out": run(module, randn(3, 5, 4, seed=591))}


@probe(MODULE)
def gradients(ns):
    module = causal(ns, seed=595)
    out = module(randn(3, 5, 4, seed=596))
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (3, 5, 8):
        raise ContractError(
            "contract.wrong-shape",
            what="CausalAttention output",
            expected=[3, 5, 8],
            got=list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__,
        )
    (out * randn(3, 5, 8, seed=597)).sum().backward()
    return {name: (None if p.grad is None else p.grad.detach().clone()) for name, p in module.named_parameters()}
