"""Chapter 3 public checks, PyTorch edition: the values. Every function and class of the exercise,
run on fixed inputs (and known weights, set by attribute name: the item's text says so, the code
shown with a failure is the call), must give the reference's output
on the same inputs: check_expected.json, made when the bundle was, holds those outputs, the outputs
of known mistakes and the reference's intermediate values, never its code (ch3_check_diagnosis.py
uses them to say why a check fails). Some checks here are properties that no single value shows:
dropout in training mode, the wrapper's parameters, the exercises' configurations.

ch3_checks.py imports this module after ch3_check_list.py (its VALUE_CHECKS); the checks register in
CHECKS, which the runner takes in book order.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ch3_check_list import (
    CHECKS,
    book_inputs,
    check,
    expect_close,
    expect_equal,
    expect_tensor,
    transfer_mistake,
    transfer_shells,
    without_bias,
)
from ch3_check_tools import Mismatch, fmt, phrase

PROBES = {}  # value probe key -> function(m, torch) -> the output compared with the reference's
SEEDED = {}  # the probes whose parameters come from a seed -> their twins (see `probe`)
EXPECTED = Path(__file__).resolve().with_name("check_expected.json")
_GIVEN = {}  # the bundle maker's values before they are a file (use_expected)


def use_expected(probes):
    """Compare with these values instead of check_expected.json (the bundle's maker checks them)."""
    _GIVEN["probes"] = probes
    expected_values.cache_clear()


@functools.cache
def expected_values():
    """check_expected.json: per probe, the reference's output, the outputs of known mistakes and the
    reference's intermediate values ({} while the bundle's maker computes them)."""
    if "probes" in _GIVEN:
        return _GIVEN["probes"]
    try:
        return json.loads(EXPECTED.read_text(encoding="utf-8")).get("probes", {})
    except FileNotFoundError:
        return {}


def reference(key, torch, name=None):
    """The reference's output of probe `key` (or its intermediate value `name`) as a tensor."""
    entry = expected_values().get(key, {})
    if name is None:
        return torch.tensor(entry["expected"], dtype=torch.float64)
    return next(torch.tensor(value, dtype=torch.float64) for label, value in entry["checkpoints"] if label == name)


def probe(module, key, what, seeded=False, twin=None, own=None):
    """A value check: `fn(m, torch)` on the student's code equals the reference's output on the same
    inputs; `what` shows the call; `seeded`: the parameters are the constructor's, after a seed (the
    book's numbers), not known ones; `twin`: the probe of the same computation with known weights
    (when it passes and this one does not, the parameters are not created as the book creates them);
    `own(m, torch)`: the same computation with the student's own classes of earlier sections, which
    the output may equal instead when they differ from the reference's (a mistake there is charged
    there: docs/grading-policy.md). A failure is diagnosed from the same probe (ch3_check_diagnosis.py)."""

    def register(fn):
        PROBES[key] = fn
        if seeded or twin:
            SEEDED[key] = twin

        def compare(m, torch):
            actual = fn(m, torch)
            if isinstance(actual, torch.Tensor) and actual.is_floating_point() is False:
                actual = actual.double()
            try:
                expect_close(what, actual, reference(key, torch), torch)
            except Mismatch as exc:
                if own is not None and is_own(own, m, torch, actual, reference(key, torch)):
                    return
                exc.probe = key
                raise

        CHECKS.append((module, key, compare, key))
        return fn

    return register


def is_own(own, m, torch, actual, expected):
    """Whether `actual` is what the student's own earlier classes give (`own(m, torch)`, NaN where it
    gives NaN) and that differs from the reference's `expected`."""
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            value = own(m, torch)
    except Exception:  # noqa: BLE001 - the earlier classes do not run: the reference alone judges
        return False
    if not isinstance(value, torch.Tensor) or not isinstance(actual, torch.Tensor) or value.shape != actual.shape:
        return False
    value, actual = value.detach().double(), actual.detach().double()
    differs = value.shape != expected.shape or not bool(torch.allclose(value, expected, atol=1e-4, rtol=0))
    return differs and bool(torch.allclose(actual, value, atol=1e-4, rtol=0, equal_nan=True))


def known(torch, *shape, seed=0):
    """Fixed values in [-0.5, 0.5), the same everywhere (a generator of their own: no global state)."""
    generator = torch.Generator().manual_seed(1000 + seed)
    return torch.rand(*shape, generator=generator) - 0.5


def set_linear(what, layer, torch, d_in, d_out, seed, bias=False):
    """Known weights (and biases) in the student's nn.Linear `layer`, by attribute name."""
    weight = getattr(layer, "weight", None)
    if not isinstance(weight, torch.Tensor):
        raise Mismatch(f"{what}.weight", phrase("a-tensor"), phrase("a-type", type=type(weight).__name__))
    if tuple(weight.shape) != (d_out, d_in):
        raise Mismatch(f"{what}.weight.shape", fmt((d_out, d_in)), fmt(tuple(weight.shape)))
    with torch.no_grad():
        weight.copy_(known(torch, d_out, d_in, seed=seed))
        if bias:
            if getattr(layer, "bias", None) is None:
                raise Mismatch(f"{what}.bias", phrase("a-tensor"), "None", cause="qkv-bias-ignored")
            layer.bias.copy_(known(torch, d_out, seed=seed + 50))


def set_qkv(what, module, torch, d_in, d_out, seed=0, bias=False):
    for offset, name in enumerate(("W_query", "W_key", "W_value")):
        set_linear(f"{what}.{name}", getattr(module, name), torch, d_in, d_out, seed + offset, bias)
    return module


@probe("sec3_3_simple_attention", "sec3_3-scores-query-values", "attention_scores_for_query(inputs, 2)")
def _(m, torch):
    return m.attention_scores_for_query(book_inputs(torch), 2)


@probe("sec3_3_simple_attention", "sec3_3-softmax-values", "softmax_naive(x)")
def _(m, torch):
    return m.softmax_naive(known(torch, 2, 3, 4, seed=1) * 6)


@probe("sec3_3_simple_attention", "sec3_3-context-query-values", "context_vector_for_query(inputs, 2)")
def _(m, torch):
    return m.context_vector_for_query(book_inputs(torch), 2)


@probe("sec3_3_simple_attention", "sec3_3-scores-values", "attention_scores(inputs)")
def _(m, torch):
    return m.attention_scores(book_inputs(torch))


@probe("sec3_3_simple_attention", "sec3_3-weights-values", "attention_weights(inputs)")
def _(m, torch):
    return m.attention_weights(book_inputs(torch))


@probe("sec3_3_simple_attention", "sec3_3-context-values", "context_vectors(inputs)")
def _(m, torch):
    return m.context_vectors(book_inputs(torch))


@probe("sec3_4_self_attention", "sec3_4-qkv-values", "torch.cat(project_qkv(x, W_query, W_key, W_value))")
def _(m, torch):
    out = m.project_qkv(
        known(torch, 5, 3), known(torch, 3, 4, seed=1), known(torch, 3, 4, seed=2), known(torch, 3, 4, seed=3)
    )
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise Mismatch(
            "project_qkv(x, W_query, W_key, W_value)",
            phrase("three-tensors"),
            phrase("a-type", type=type(out).__name__),
        )
    return torch.cat([expect_tensor(f"project_qkv(...)[{i}]", t, torch, (5, 4)) for i, t in enumerate(out)])


@probe("sec3_4_self_attention", "sec3_4-weights-values", "scaled_attention_weights(queries, keys)")
def _(m, torch):
    return m.scaled_attention_weights(known(torch, 5, 4, seed=4) * 4, known(torch, 5, 4, seed=5) * 4)


def v1_with_known_weights(m, torch, d_in=3, d_out=4):
    sa = m.SelfAttention_v1(d_in, d_out)
    with torch.no_grad():
        for seed, name in enumerate(("W_query", "W_key", "W_value")):
            parameter = getattr(sa, name)
            if tuple(getattr(parameter, "shape", ())) != (d_in, d_out):
                raise Mismatch(
                    f"SelfAttention_v1({d_in}, {d_out}).{name}.shape",
                    fmt((d_in, d_out)),
                    fmt(tuple(getattr(parameter, "shape", ()))),
                )
            parameter.copy_(known(torch, d_in, d_out, seed=10 + seed) + 0.5)
    return sa


@probe("sec3_4_self_attention", "sec3_4-v1-values", "SelfAttention_v1(3, 4)(inputs)")
def _(m, torch):
    return v1_with_known_weights(m, torch)(book_inputs(torch))


@probe("sec3_4_self_attention", "sec3_4-v2-values", "SelfAttention_v2(3, 4, qkv_bias=True)(inputs)")
def _(m, torch):
    sa = set_qkv(
        "SelfAttention_v2(3, 4, qkv_bias=True)", m.SelfAttention_v2(3, 4, qkv_bias=True), torch, 3, 4, 20, True
    )
    return sa(book_inputs(torch))


@probe(
    "sec3_4_self_attention",
    "sec3_4-v1-book",
    "torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)",
    twin="sec3_4-v1-values",
)
def _(m, torch):
    torch.manual_seed(123)
    return m.SelfAttention_v1(3, 2)(book_inputs(torch))


@probe(
    "exercise3_1_weight_transfer",
    "ex3_1-values",
    "transfer_weights(sa_v2, sa_v1); torch.stack([sa_v1.W_query, sa_v1.W_key, sa_v1.W_value])",
)
def _(m, torch):
    sa_v2, sa_v1 = transfer_shells(torch, 3, 4, seed=30)
    m.transfer_weights(sa_v2, sa_v1)
    mistake = transfer_mistake(sa_v1, sa_v2, torch)
    if mistake:
        raise Mismatch(
            "sa_v1.W_query, sa_v1.W_key, sa_v1.W_value",
            phrase("transposed-weights"),
            phrase("other-weights"),
            cause=mistake,
        )
    return torch.stack([getattr(sa_v1, name) for name in ("W_query", "W_key", "W_value")]).detach()


@probe("sec3_5_causal_attention", "sec3_5-renormalize-values", "mask_and_renormalize(w)")
def _(m, torch):
    return m.mask_and_renormalize(torch.softmax(known(torch, 2, 5, 5, seed=40) * 6, dim=-1))


@probe("sec3_5_causal_attention", "sec3_5-masked-weights-values", "masked_attention_weights(scores, 4)")
def _(m, torch):
    return m.masked_attention_weights(known(torch, 2, 5, 5, seed=41) * 6, 4)


def causal_with_known_weights(m, torch, bias=True):
    ca = m.CausalAttention(6, 8, 8, 0.5, qkv_bias=bias)
    return set_qkv("CausalAttention(6, 8, 8, 0.5, qkv_bias=True)", ca, torch, 6, 8, 50, bias)


@probe("sec3_5_causal_attention", "sec3_5-values", "CausalAttention(6, 8, 8, 0.5, qkv_bias=True).eval()(x)")
def _(m, torch):
    return causal_with_known_weights(m, torch).eval()(known(torch, 2, 5, 6, seed=51))


@probe(
    "sec3_5_causal_attention",
    "sec3_5-book",
    "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)",
    twin="sec3_5-values",
)
def _(m, torch):
    torch.manual_seed(123)
    ca = without_bias("CausalAttention(3, 2, 6, 0.0)", m.CausalAttention(3, 2, 6, 0.0))
    return ca(torch.stack([book_inputs(torch)] * 2))


def expect_right_in_eval(key, out, torch):
    """Dropout is judged against the reference's attention weights: the eval-mode output must be
    the reference's first (the check of probe `key`, which says why it is not)."""
    try:
        expect_close("eval()", out, reference(key, torch), torch)
    except Mismatch:
        raise Mismatch("model.eval()(x)", phrase("eval-values"), phrase("other-values"), probe=key) from None


def expect_dropped_weights(what, out, weights, values, torch, p=0.5):
    """In training mode dropout acts on the attention weights: each output row is the values weighted
    by the weights, each kept one scaled by 1/(1 - p), the others 0. The coefficients are read back
    from the output (the values have more columns than there are tokens), whatever the code."""
    out, weights, values = out.detach().double(), weights.double(), values.double()
    coefficients = out @ torch.linalg.pinv(values)
    kept = weights > 1e-3
    ratios = coefficients[kept] / weights[kept]
    dropped = ratios.abs() < 1e-3
    scale = 1 / (1 - p)
    if bool(((ratios - 1).abs() < 1e-3).all()):
        raise Mismatch(what, phrase("dropped-weights", scale=fmt(scale)), phrase("no-dropout"), hint="no-dropout")
    if bool((dropped | ((ratios - scale).abs() < 1e-3)).all()) and bool((coefficients[~kept].abs() < 1e-3).all()):
        return
    others = ratios[~dropped]
    if (
        others.numel()
        and bool(((others - others[0]).abs() < 1e-3).all())
        and bool((coefficients[~kept].abs() < 1e-3).all())
    ):
        rate = fmt(1 - 1 / float(others[0]))
        raise Mismatch(
            what, phrase("dropped-weights", scale=fmt(scale)), phrase("dropout-rate", rate=rate), hint="dropout-rate"
        )
    raise Mismatch(
        what, phrase("dropped-weights", scale=fmt(scale)), phrase("not-dropped-weights"), cause="dropout-misplaced"
    )


@check("sec3_5_causal_attention", "sec3_5-dropout", probe="sec3_5-values")
def _(m, torch):
    ca = causal_with_known_weights(m, torch)
    x = known(torch, 2, 5, 6, seed=51)
    with torch.no_grad():
        expect_right_in_eval("sec3_5-values", ca.eval()(x), torch)
        out = expect_tensor("ca.train()(x)", ca.train()(x), torch, (2, 5, 8))
    weights, values = reference("sec3_5-values", torch, "weights"), reference("sec3_5-values", torch, "values")
    expect_dropped_weights("CausalAttention(6, 8, 8, 0.5).train()(x)", out, weights, values, torch)


def wrapper_with_known_weights(m, torch):
    mha = m.MultiHeadAttentionWrapper(3, 4, 8, 0.5, num_heads=2, qkv_bias=True)
    for index, head in enumerate(getattr(mha, "heads", [])):
        set_qkv(f"MultiHeadAttentionWrapper(...).heads[{index}]", head, torch, 3, 4, 60 + 3 * index, True)
    return mha


def own_heads(m, torch):
    """The wrapper's heads as the student's own CausalAttention (3.5) computes them, side by side."""
    causal = m._sibling("sec3_5_causal_attention")
    heads = []
    for index in range(2):
        head = causal.CausalAttention(3, 4, 8, 0.5, qkv_bias=True)
        set_qkv(f"CausalAttention(3, 4, 8, 0.5, qkv_bias=True)[{index}]", head, torch, 3, 4, 60 + 3 * index, True)
        heads.append(head.eval()(known(torch, 2, 5, 3, seed=61)))
    return torch.cat(heads, dim=-1)


@probe(
    "sec3_6_multi_head_attention",
    "sec3_6-wrapper-values",
    "MultiHeadAttentionWrapper(3, 4, 8, 0.5, num_heads=2, qkv_bias=True).eval()(x)",
    own=own_heads,
)
def _(m, torch):
    return wrapper_with_known_weights(m, torch).eval()(known(torch, 2, 5, 3, seed=61))


@check("sec3_6_multi_head_attention", "sec3_6-wrapper-parameters")
def _(m, torch):
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    count = sum(p.numel() for p in mha.parameters())
    expect = 2 * 3 * 3 * 2  # two heads of three (3, 2) projections
    if count != expect:
        raise Mismatch(
            "sum(p.numel() for p in MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).parameters())",
            fmt(expect),
            fmt(count),
            cause="heads-not-registered" if count == 0 else None,
        )


def mha_with_known_weights(m, torch, identity=False):
    mha = set_qkv(
        "MultiHeadAttention(6, 8, 8, 0.5, num_heads=2, qkv_bias=True)",
        m.MultiHeadAttention(6, 8, 8, 0.5, num_heads=2, qkv_bias=True),
        torch,
        6,
        8,
        70,
        True,
    )
    set_linear("MultiHeadAttention(...).out_proj", getattr(mha, "out_proj", None), torch, 8, 8, 73, True)
    if identity:
        with torch.no_grad():
            mha.out_proj.weight.copy_(torch.eye(8))
            mha.out_proj.bias.zero_()
    return mha


@probe(
    "sec3_6_multi_head_attention",
    "sec3_6-mha-values",
    "MultiHeadAttention(6, 8, 8, 0.5, num_heads=2, qkv_bias=True).eval()(x)",
)
def _(m, torch):
    return mha_with_known_weights(m, torch).eval()(known(torch, 2, 4, 6, seed=71))


@probe(
    "sec3_6_multi_head_attention",
    "sec3_6-mha-book",
    "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)",
    twin="sec3_6-mha-values",
)
def _(m, torch):
    torch.manual_seed(123)
    mha = without_bias("MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)", m.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))
    return mha(torch.stack([book_inputs(torch)] * 2))


@check("sec3_6_multi_head_attention", "sec3_6-mha-dropout", probe="sec3_6-mha-values")
def _(m, torch):
    x = known(torch, 2, 4, 6, seed=71)
    with torch.no_grad():
        expect_right_in_eval("sec3_6-mha-values", mha_with_known_weights(m, torch).eval()(x), torch)
        mha = mha_with_known_weights(m, torch, identity=True).train()
        out = expect_tensor("mha.train()(x)", mha(x), torch, (2, 4, 8))
    weights = reference("sec3_6-mha-values", torch, "weights")  # (b, num_heads, T, T)
    values = reference("sec3_6-mha-values", torch, "split_values")  # (b, num_heads, T, head_dim)
    heads = out.view(2, 4, 2, 4).transpose(1, 2)  # out_proj is the identity: the heads side by side
    expect_dropped_weights("MultiHeadAttention(6, 8, 8, 0.5, num_heads=2).train()(x)", heads, weights, values, torch)


def own_two_dim_wrapper(m, torch):
    """The student's own MultiHeadAttentionWrapper (3.6) with two heads of one dimension, seeded alike."""
    torch.manual_seed(123)
    wrapper = m._sibling("sec3_6_multi_head_attention").MultiHeadAttentionWrapper(3, 1, 6, 0.0, num_heads=2)
    return wrapper(torch.stack([book_inputs(torch)] * 2))


@probe(
    "exercise3_2_two_dim_output",
    "ex3_2-book",
    "torch.manual_seed(123); build_two_dim_wrapper(3, 6)(batch)",
    seeded=True,
    own=own_two_dim_wrapper,
)
def _(m, torch):
    torch.manual_seed(123)
    return m.build_two_dim_wrapper(3, 6)(torch.stack([book_inputs(torch)] * 2))


@check("exercise3_2_two_dim_output", "ex3_2-dropout")
def _(m, torch):
    mha = m.build_two_dim_wrapper(3, 6, 0.3)
    rates = [getattr(getattr(head, "dropout", None), "p", None) for head in getattr(mha, "heads", [])]
    expect_equal(
        "[head.dropout.p for head in build_two_dim_wrapper(3, 6, 0.3).heads]",
        rates,
        [0.3] * len(rates) or [0.3],
        "wrong-config",
    )


@check("exercise3_3_gpt2_attention", "ex3_3-sizes")
def _(m, torch):
    mha = m.build_gpt2_small_attention(0.1)
    sizes = {
        "W_query.in_features": (getattr(getattr(mha, "W_query", None), "in_features", None), 768),
        "mask.shape": (tuple(getattr(mha, "mask", torch.empty(0)).shape), (1024, 1024)),
        "dropout.p": (getattr(getattr(mha, "dropout", None), "p", None), 0.1),
    }
    for name, (actual, expected) in sizes.items():
        expect_equal(f"build_gpt2_small_attention(0.1).{name}", actual, expected, "wrong-config")


def own_gpt2_attention(m, torch):
    """The student's own MultiHeadAttention (3.6) in GPT-2 small's configuration, seeded alike."""
    torch.manual_seed(123)
    mha = m._sibling("sec3_6_multi_head_attention").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12).eval()
    return mha(known(torch, 1, 4, 768, seed=80))[0, :, :6]


@probe(
    "exercise3_3_gpt2_attention",
    "ex3_3-book",
    "torch.manual_seed(123); build_gpt2_small_attention()(x)[0, :, :6]",
    seeded=True,
    own=own_gpt2_attention,
)
def _(m, torch):
    torch.manual_seed(123)
    mha = m.build_gpt2_small_attention().eval()
    with torch.no_grad():
        return mha(known(torch, 1, 4, 768, seed=80))[0, :, :6]
