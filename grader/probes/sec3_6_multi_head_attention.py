"""Probes of sec3_6_multi_head_attention: the stacked-heads wrapper (3.6.1) and multi-head
attention with weight splits (3.6.2).

Sizes are chosen so that bugs show: head_dim > 1 (a missing sqrt(head_dim) or a scale by the
full d_out shows), d_in == d_out in one configuration (an untransposed copy is no shape error),
T < context_length (an unsliced mask fails), batch > 2 and T != head_dim (a split or merge without
transpose gives other numbers instead of a shape error).
"""

from __future__ import annotations

import torch

from grader.probes import (
    ContractError,
    attr,
    book_inputs,
    cpu_manual_seed,
    function,
    linear_weights,
    probe,
    qkv_weights,
    randn,
    tensor,
    transplant,
)

MODULE = "sec3_6_multi_head_attention"

# (d_in, d_out, context_length, num_heads, batch, tokens, seed)
WRAPPER_CONFIGS = {
    "main": (4, 3, 8, 3, 3, 5, 630),  # T=5 < context_length=8
    "square": (4, 4, 8, 2, 4, 6, 640),  # d_in == d_out, batch 4
}
WRAPPER_CAUSAL = (4, 3, 8, 2, 3, 6, 650)  # keep 3 tokens
MHA_CONFIGS = {
    "main": (6, 8, 8, 2, 3, 5, 600),  # head_dim 4, T < context_length
    "square": (8, 8, 8, 4, 4, 6, 610),  # d_in == d_out, head_dim 2
}


def _cls(ns, name):
    return function(ns, MODULE, name)


def _mha(ns, d_in, d_out, context_length, num_heads, *, dropout=0.0, qkv_bias=False, seed):
    """A student MultiHeadAttention with known weights."""
    module = _cls(ns, "MultiHeadAttention")(
        d_in, d_out, context_length, dropout, num_heads=num_heads, qkv_bias=qkv_bias
    )
    weights = qkv_weights(d_in, d_out, bias=qkv_bias, seed=seed)
    weights |= linear_weights("out_proj", d_out, d_out, bias=True, seed=seed + 50)
    transplant(module, weights)
    return module


def _wrapper(ns, d_in, d_out, context_length, num_heads, *, seed):
    """A student MultiHeadAttentionWrapper with known weights in every head."""
    module = _cls(ns, "MultiHeadAttentionWrapper")(d_in, d_out, context_length, 0.0, num_heads=num_heads)
    heads = attr(module, "heads")
    try:
        count = len(heads)
    except TypeError:
        count = -1
    if count != num_heads:
        raise ContractError("contract.wrong-shape", what="heads", expected=[num_heads], got=[count])
    for i in range(num_heads):
        transplant(module, qkv_weights(d_in, d_out, seed=seed + 100 * i, prefix=f"heads.{i}."))
    return module


def _future_changed(x: torch.Tensor, keep: int, seed: int) -> torch.Tensor:
    """x with every token from position `keep` on replaced by other values."""
    changed = x.clone()
    changed[:, keep:] = randn(x.shape[0], x.shape[1] - keep, x.shape[2], seed=seed)
    return changed


def _first_changed(x: torch.Tensor, seed: int) -> torch.Tensor:
    """x with its first token replaced by other values (every later output should change)."""
    changed = x.clone()
    changed[:, 0] = randn(x.shape[0], x.shape[2], seed=seed)
    return changed


def _param_count(module) -> int:
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------------------------------------
# 3.6.1 MultiHeadAttentionWrapper
# ---------------------------------------------------------------------------------------------


@probe(MODULE)
def wrapper_parameters(ns):
    """Are the heads registered sub-modules? (A plain list hides their parameters.)"""
    module = _cls(ns, "MultiHeadAttentionWrapper")(4, 3, 8, 0.0, num_heads=3)
    heads = attr(module, "heads")
    heads = list(heads) if isinstance(heads, (list, tuple, torch.nn.ModuleList, torch.nn.Sequential)) else []
    return {
        "num_heads": len(heads),
        "wrapper_parameters": _param_count(module),
        "head_parameters": sum(_param_count(h) for h in heads if isinstance(h, torch.nn.Module)),
    }


@probe(MODULE)
def wrapper_heads(ns):
    """The wrapper's output and, separately, the output of each of its own heads."""
    module = _wrapper(ns, 4, 3, 8, 3, seed=620).eval()
    x = randn(3, 5, 4, seed=621)
    with torch.no_grad():
        out = tensor(module(x), "MultiHeadAttentionWrapper(x)")
        heads = [tensor(head(x), "CausalAttention(x)") for head in attr(module, "heads")]
    return {"out": out, "heads": heads}


@probe(MODULE)
def wrapper_forward(ns):
    outputs = {}
    for key, (d_in, d_out, ctx, heads, b, t, seed) in WRAPPER_CONFIGS.items():
        module = _wrapper(ns, d_in, d_out, ctx, heads, seed=seed).eval()
        with torch.no_grad():
            outputs[key] = tensor(module(randn(b, t, d_in, seed=seed + 1)), "MultiHeadAttentionWrapper(x)")
    return outputs


def _causal_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    d_in, _, _, _, b, t, seed = WRAPPER_CAUSAL
    x = randn(b, t, d_in, seed=seed + 1)
    return x, _future_changed(x, 3, seed=seed + 2)


@probe(MODULE)
def wrapper_causal(ns):
    d_in, d_out, ctx, heads, _, _, seed = WRAPPER_CAUSAL
    module = _wrapper(ns, d_in, d_out, ctx, heads, seed=seed).eval()
    x, changed = _causal_inputs()
    with torch.no_grad():
        out = tensor(module(x), "MultiHeadAttentionWrapper(x)")
        changed = tensor(module(changed), "MultiHeadAttentionWrapper(x)")
        earlier = tensor(module(_first_changed(x, seed=seed + 3)), "MultiHeadAttentionWrapper(x)")
    return {"out": out, "changed": changed, "earlier": earlier, "keep": 3}


def _own_heads(ns, config: tuple, inputs: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """The student's own CausalAttention of 3.5, one per head of the wrapper `config` builds (with
    that head's weights), each run alone: [[head(x) for each head] for x in inputs]."""
    d_in, d_out, ctx, num_heads, _, _, seed = config
    cls = function(ns, "sec3_5_causal_attention", "CausalAttention")
    heads = []
    for i in range(num_heads):
        head = cls(d_in, d_out, ctx, 0.0)
        transplant(head, qkv_weights(d_in, d_out, seed=seed + 100 * i))
        heads.append(head.eval())
    with torch.no_grad():
        return [[tensor(head(x), "CausalAttention(x)") for head in heads] for x in inputs]


@probe(MODULE)
def wrapper_own_heads(ns):
    """What the student's own CausalAttention (3.5) gives for each head of `wrapper_forward` and
    `wrapper_causal`, each head alone: where it differs from the reference's, the wrapper is judged
    against these side by side (a mistake of 3.5 is paid for in 3.5 only)."""
    outputs: dict = {}
    for key, config in WRAPPER_CONFIGS.items():
        d_in, _, _, _, b, t, seed = config
        outputs[key] = _own_heads(ns, config, [randn(b, t, d_in, seed=seed + 1)])[0]
    out, changed = _own_heads(ns, WRAPPER_CAUSAL, list(_causal_inputs()))
    outputs["causal"] = {"out": out, "changed": changed}
    return outputs


# ---------------------------------------------------------------------------------------------
# 3.6.2 MultiHeadAttention
# ---------------------------------------------------------------------------------------------


@probe(MODULE)
def mha_configuration(ns):
    """The attributes the exercise asks for, and whether an indivisible d_out is rejected."""
    cls = _cls(ns, "MultiHeadAttention")
    module = cls(6, 8, 8, 0.0, num_heads=4)
    values = {name: attr(module, name) for name in ("d_out", "num_heads", "head_dim")}
    values = {name: v if type(v) is int else repr(v)[:40] for name, v in values.items()}
    try:
        cls(6, 7, 8, 0.0, num_heads=2)
    except Exception as exc:  # noqa: BLE001 - any exception is a refusal: ValueError, AssertionError...
        values |= {"raised": True, "type": type(exc).__name__}
    else:
        values |= {"raised": False, "type": ""}
    return values


@probe(MODULE)
def mha_forward(ns):
    outputs = {}
    for key, (d_in, d_out, ctx, heads, b, t, seed) in MHA_CONFIGS.items():
        module = _mha(ns, d_in, d_out, ctx, heads, seed=seed).eval()
        with torch.no_grad():
            outputs[key] = tensor(module(randn(b, t, d_in, seed=seed + 1)), "MultiHeadAttention(x)")
    return outputs


@probe(MODULE)
def mha_attention_weights(ns):
    """Per-head attention weights on the book's sentence, seen by a hook on `module.dropout`.

    Returns no weights when the hook never fires (e.g. F.scaled_dot_product_attention): only the
    heatmap uses them, never a graded comparison."""
    module = _mha(ns, 3, 4, 6, 2, seed=660).eval()
    seen = []
    dropout = getattr(module, "dropout", None)
    handle = None
    if isinstance(dropout, torch.nn.Module):
        handle = dropout.register_forward_hook(lambda mod, args, out: seen.append(out))
    try:
        with torch.no_grad():
            module(book_inputs().unsqueeze(0))
    finally:
        if handle is not None:
            handle.remove()
    if (
        len(seen) == 1
        and isinstance(seen[0], torch.Tensor)
        and seen[0].dim() == 4
        and tuple(seen[0].shape[-2:]) == (6, 6)
    ):
        return {"weights": seen[0][0].detach().clone()}  # (heads, 6, 6)
    return {}


@probe(MODULE)
def mha_causal(ns):
    module = _mha(ns, 6, 8, 8, 2, seed=670).eval()
    x = randn(3, 6, 6, seed=671)
    with torch.no_grad():
        out = tensor(module(x), "MultiHeadAttention(x)")
        changed = tensor(module(_future_changed(x, 3, seed=672)), "MultiHeadAttention(x)")
        earlier = tensor(module(_first_changed(x, seed=673)), "MultiHeadAttention(x)")
    return {"out": out, "changed": changed, "earlier": earlier, "keep": 3}


@probe(MODULE)
def mha_batch(ns):
    """A batch of 4 at once, and each of its sequences alone."""
    module = _mha(ns, 6, 8, 8, 2, seed=680).eval()
    x = randn(4, 5, 6, seed=681)
    with torch.no_grad():
        batched = tensor(module(x), "MultiHeadAttention(x)")
        single = torch.cat([tensor(module(x[i : i + 1]), "MultiHeadAttention(x)") for i in range(4)])
    return {"batched": batched, "single": single}


@probe(MODULE)
def mha_dropout(ns):
    """dropout=0.5: eval mode twice; train mode with out_proj the identity, so that a dropped
    attention weight of the first token (which attends only to itself) zeroes its whole head."""
    d_in, d_out, heads = 6, 8, 2
    module = _mha(ns, d_in, d_out, 8, heads, dropout=0.5, seed=690)
    transplant(
        module,
        {
            "out_proj.weight": torch.eye(d_out, dtype=torch.float32),
            "out_proj.bias": torch.zeros(d_out, dtype=torch.float32),
        },
    )
    x = randn(8, 5, d_in, seed=691)
    module.eval()
    with torch.no_grad():
        eval_a = tensor(module(x), "MultiHeadAttention(x)")
        eval_b = tensor(module(x), "MultiHeadAttention(x)")
    module.train()
    with torch.no_grad():
        train = tensor(module(x), "MultiHeadAttention(x)")
    return {"eval_a": eval_a, "eval_b": eval_b, "train": train, "num_heads": heads}


@probe(MODULE)
def mha_float64(ns):
    module = _mha(ns, 6, 8, 8, 2, seed=700).eval()
    module = module.to(torch.float64)
    buffers = sorted(name for name, _ in module.named_buffers())
    with torch.no_grad():
        out = tensor(module(randn(3, 5, 6, seed=701, dtype=torch.float64)), "MultiHeadAttention(x)")
    return {"out": out, "buffers": buffers}


@probe(MODULE)
def mha_qkv_bias(ns):
    cls = _cls(ns, "MultiHeadAttention")
    names = ("W_query", "W_key", "W_value")

    def has_bias(module):
        return [isinstance(getattr(attr(module, n), "bias", None), torch.Tensor) for n in names]

    without = has_bias(cls(6, 8, 8, 0.0, num_heads=2))
    module = cls(6, 8, 8, 0.0, num_heads=2, qkv_bias=True)
    with_bias = has_bias(module)
    result = {"default_bias": without, "with_bias": with_bias}
    if all(with_bias):
        module = _mha(ns, 6, 8, 8, 2, qkv_bias=True, seed=710).eval()
        with torch.no_grad():
            result["out"] = tensor(module(randn(3, 5, 6, seed=711)), "MultiHeadAttention(x)")
    return result


@probe(MODULE)
def mha_gradients(ns):
    module = _mha(ns, 6, 8, 8, 2, seed=720).train()
    out = module(randn(3, 5, 6, seed=721))
    if not isinstance(out, torch.Tensor):
        tensor(out, "MultiHeadAttention(x)")
    (out * randn(*out.shape, seed=722)).sum().backward()
    missing = sorted(
        name for name, p in module.named_parameters() if p.grad is None or not bool(p.grad.abs().sum() > 0)
    )
    return {"without_gradient": missing, "num_parameters": len(list(module.parameters()))}


@probe(MODULE)
def mha_book_seeded(ns):
    """The book's example: torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)."""
    cls = _cls(ns, "MultiHeadAttention")
    cpu_manual_seed(123)
    module = cls(3, 2, 6, 0.0, num_heads=2)
    batch = torch.stack((book_inputs(), book_inputs()))
    with torch.no_grad():
        return {"out": tensor(module(batch), "MultiHeadAttention(batch)")}
