"""Probes of sec3_4_self_attention: scaled dot-product attention with trainable weights (book 3.4).

One probe per contract function or class (and per property), so that a misconception in one of
them shows only on the tests of that one. Sizes are chosen so that bugs show: head size d_k > 1
(a missing or wrong sqrt(d_k) changes the weights), T != d_k (scaling by the wrong size shows),
d_in == d_out (an untransposed matrix is no shape error) next to d_in != d_out.
"""

from __future__ import annotations

from typing import Any

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

MODULE = "sec3_4_self_attention"


def book_matrices() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The book's 3.4.1 matrices: torch.manual_seed(123); torch.rand(3, 2) three times."""
    generator = torch.Generator().manual_seed(123)
    first, second, third = (torch.rand(3, 2, generator=generator, dtype=torch.float32) for _ in range(3))
    return first, second, third


def v1_weights(d_in: int, d_out: int, *, seed: int, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """(d_in, d_out) matrices for SelfAttention_v1 (x @ W), distinct for query, key and value."""
    return {
        name: randn(d_in, d_out, seed=seed + i, dtype=dtype) / d_in**0.5
        for i, name in enumerate(("W_query", "W_key", "W_value"))
    }


def v2_weights(d_in: int, d_out: int, *, bias: bool, seed: int) -> dict[str, torch.Tensor]:
    """nn.Linear weights (d_out, d_in) (and biases) for W_query, W_key, W_value."""
    weights: dict[str, torch.Tensor] = {}
    for i, name in enumerate(("W_query", "W_key", "W_value")):
        weights[f"{name}.weight"] = randn(d_out, d_in, seed=seed + 10 * i) / d_in**0.5
        if bias:
            weights[f"{name}.bias"] = randn(d_out, seed=seed + 10 * i + 1) * 0.5
    return weights


@probe(MODULE)
def project_qkv(ns):
    fn = function(ns, MODULE, "project_qkv")
    out = {}
    for tag, x, w in (
        ("square", randn(5, 4, seed=401), v1_weights(4, 4, seed=402)),
        ("rect", randn(6, 3, seed=403), v1_weights(3, 5, seed=404)),
        ("f64", randn(5, 4, seed=405, dtype=torch.float64), v1_weights(4, 6, seed=406, dtype=torch.float64)),
    ):
        result = fn(x, w["W_query"], w["W_key"], w["W_value"])
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            raise_contract("project_qkv", result)
        for name, value in zip(("queries", "keys", "values"), result):
            out[f"{tag}_{name}"] = tensor(value, f"project_qkv ({name})")
    return out


def raise_contract(what: str, result) -> None:
    raise ContractError("contract.not-a-triple", what=what, got=type(result).__name__)


@probe(MODULE)
def scaled_attention_weights(ns):
    fn = function(ns, MODULE, "scaled_attention_weights")
    w_query, w_key, _ = book_matrices()
    x = book_inputs()
    return {
        # The book's sentence projected with the book's seeded matrices: d_k = 2.
        "book": tensor(fn(x @ w_query, x @ w_key), "scaled_attention_weights"),  # (6, 6)
        # T = 5 tokens, d_k = 6: dividing by d_k, by sqrt(T) or not at all all differ.
        "random": tensor(fn(randn(5, 6, seed=411) * 2, randn(5, 6, seed=412) * 2), "scaled_attention_weights"),
        "f64": tensor(
            fn(randn(4, 9, seed=413, dtype=torch.float64) * 2, randn(4, 9, seed=414, dtype=torch.float64) * 2),
            "scaled_attention_weights",
        ),  # (4, 4), d_k = 9
    }


@probe(MODULE)
def v1_book_seed(ns):
    """The book's own run: the seeded initialisation IS the task here (no transplant)."""
    cls = attr(ns.module(MODULE), "SelfAttention_v1")
    cpu_manual_seed(123)
    sa_v1 = cls(3, 2)
    return {"book": tensor(sa_v1(book_inputs()), "SelfAttention_v1(3, 2)(inputs)")}  # (6, 2)


@probe(MODULE)
def v1_transplanted(ns):
    cls = attr(ns.module(MODULE), "SelfAttention_v1")
    out = {}
    for tag, d_in, d_out, x in (("square", 4, 4, randn(5, 4, seed=421)), ("rect", 3, 5, randn(6, 3, seed=422))):
        module = cls(d_in, d_out)
        transplant(module, v1_weights(d_in, d_out, seed=423 + d_out))
        out[tag] = tensor(module(x), "SelfAttention_v1 output")
    module = cls(4, 6)
    transplant(module, v1_weights(4, 6, seed=430))
    module = module.to(torch.float64)
    out["f64"] = tensor(module(randn(5, 4, seed=431, dtype=torch.float64)), "SelfAttention_v1 output")
    return out


@probe(MODULE)
def v1_parameters(ns):
    cls = attr(ns.module(MODULE), "SelfAttention_v1")
    module = cls(4, 6)
    return {"parameters": sorted([name, list(p.shape)] for name, p in module.named_parameters())}


@probe(MODULE)
def v2_transplanted(ns):
    cls = attr(ns.module(MODULE), "SelfAttention_v2")
    out: dict[str, Any] = {}
    for tag, d_in, d_out, x in (("square", 4, 4, randn(5, 4, seed=441)), ("rect", 3, 5, randn(6, 3, seed=442))):
        module = cls(d_in, d_out)
        transplant(module, v2_weights(d_in, d_out, bias=False, seed=443 + d_out))
        out[tag] = tensor(module(x), "SelfAttention_v2 output")
    module = cls(4, 6)
    transplant(module, v2_weights(4, 6, bias=False, seed=450))
    module = module.to(torch.float64)
    out["f64"] = tensor(module(randn(5, 4, seed=451, dtype=torch.float64)), "SelfAttention_v2 output")
    out["parameters"] = parameter_names(cls(4, 6))
    return out


@probe(MODULE)
def v2_qkv_bias(ns):
    cls = attr(ns.module(MODULE), "SelfAttention_v2")
    module = cls(4, 6, qkv_bias=True)
    names = sorted(parameter_names(module))
    transplant(module, v2_weights(4, 6, bias=True, seed=460))
    return {"parameters": names, "out": tensor(module(randn(5, 4, seed=461)), "SelfAttention_v2 output")}


@probe(MODULE)
def gradients(ns):
    """Backpropagate a fixed weighted sum of the outputs; report each parameter's gradient."""
    grads = {}
    for cls_name, module_args, weights in (
        ("SelfAttention_v1", (4, 6), v1_weights(4, 6, seed=470)),
        ("SelfAttention_v2", (4, 6), v2_weights(4, 6, bias=False, seed=471)),
    ):
        module = attr(ns.module(MODULE), cls_name)(*module_args)
        transplant(module, weights)
        out = module(randn(5, 4, seed=472))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (5, 6):
            raise ContractError(
                "contract.wrong-shape",
                what=f"{cls_name} output",
                expected=[5, 6],
                got=list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__,
            )
        (out * randn(5, 6, seed=473)).sum().backward()
        grads[cls_name] = {
            name: (None if p.grad is None else p.grad.detach().clone()) for name, p in module.named_parameters()
        }
    return grads
