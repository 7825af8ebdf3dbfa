"""Chapter 3 public checks, PyTorch edition: what is checked, section by section, and how a failure is said.

Each check calls the student's code through `m` (a module, or a notebook's namespace) and raises
Mismatch(what, expected, actual) when something is not as the exercise asks (its `probe`, a value
check of the same function or class, says why: ch3_check_diagnosis.py): `what` is code (the
same in every language), `expected` and `actual` are values or phrases of check_messages.json.
ch3_checks.py runs them and reports. These checks are public on purpose: shapes and properties
here, and in ch3_check_values.py the values of every function and class on fixed inputs, compared
with the reference's on the same inputs. The grader checks much more.
"""

from __future__ import annotations

import contextlib
import warnings

from ch3_check_sections import BOOK_ORDER
from ch3_check_tools import CheckList, Mismatch, expect_refusal, fmt, phrase

MODULES = BOOK_ORDER  # the sections in the book's order (ch3_check_sections.py, the kit's manifest)
VALUE_CHECKS = "ch3_check_values"  # the value checks, registered after these by ch3_checks.py
CHECKS = CheckList()
check = CHECKS.check
HINTS = ()  # (pattern of "ErrorType: message", hint key): none in PyTorch terms yet


def framework():
    """torch, for the checks. It warns on import when NumPy is missing; these checks never use NumPy."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch

    return torch


@contextlib.contextmanager
def seeded(torch):
    """Each check starts from seed 0, float32 as the default dtype and gradients on, whatever the
    student's code set (`torch.set_default_dtype(torch.float64)` at import would change every input
    drawn without a dtype and every layer's initial weights; the grader resets the same before each
    of its probes), and leaves the caller's random state and settings as they were."""
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(True)
        torch.manual_seed(0)
        try:
            yield
        finally:
            torch.set_default_dtype(dtype)
            torch.set_grad_enabled(grad)


def expect_tensor(what, value, torch, shape=None):
    if not isinstance(value, torch.Tensor):
        raise Mismatch(what, phrase("a-tensor"), phrase("a-type", type=type(value).__name__))
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Mismatch(f"{what}.shape", fmt(tuple(shape)), fmt(tuple(value.shape)))
    return value


def expect_equal(what, actual, expected, cause=None):
    if actual != expected:
        raise Mismatch(what, fmt(expected), fmt(actual), cause=cause)


def expect_close(what, actual, expected, torch, atol=1e-4):
    """Values within `atol`; a mismatch names the first differing row (or entry) of `what`."""
    expect_tensor(what, actual, torch, expected.shape)
    actual, expected = actual.detach().float(), expected.float()
    bad = ~torch.isclose(actual, expected, atol=atol, rtol=0, equal_nan=False)
    if not bool(bad.any()):
        return
    if actual.numel() <= 6:
        raise Mismatch(what, fmt(expected), fmt(actual))
    index = tuple(int(i) for i in bad.nonzero()[0])
    row = index[:-1] if actual.shape[-1] <= 6 else index
    label = f"{what}[{', '.join(map(str, row))}]"
    raise Mismatch(label, fmt(expected[row]), fmt(actual[row]))


def expect_unchanged(what, after, before, torch, atol=1e-5):
    expect_tensor(what, after, torch, before.shape)
    if bool(torch.isnan(after).any()) or bool(torch.isnan(before).any()):
        raise Mismatch(what, phrase("unchanged"), phrase("nan"))
    difference = float((after.detach() - before.detach()).abs().max())
    if not difference <= atol:
        raise Mismatch(what, phrase("unchanged"), phrase("differs-by", value=fmt(difference)))


def without_bias(what, module):
    """`module`, built with qkv_bias=False: its query, key and value projections have no bias."""
    for name in ("W_query", "W_key", "W_value"):
        if getattr(getattr(module, name, None), "bias", None) is not None:
            raise Mismatch(f"{what}.{name}.bias", "None", phrase("a-bias"), cause="qkv-bias-ignored")
    return module


def book_inputs(torch):
    return torch.tensor(
        [
            [0.43, 0.15, 0.89],
            [0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10],
            [0.05, 0.80, 0.55],
        ]
    )


# -- 3.3 ------------------------------------------------------------------------------------------
@check("sec3_3_simple_attention", "sec3_3-softmax", probe="sec3_3-softmax-values")
def _(m, torch):
    x = torch.tensor([[0.2, -1.0, 3.0, 0.5], [1.0, 2.0, 0.0, -0.5], [0.3, 0.3, 0.1, 0.9]])
    out = expect_tensor("softmax_naive(x)", m.softmax_naive(x), torch, (3, 4))
    expect_close("softmax_naive(x).sum(dim=-1)", out.sum(dim=-1), torch.ones(3), torch)
    if not bool((out > 0).all()):
        raise Mismatch("softmax_naive(x).min()", "> 0", fmt(float(out.min())))


@check("sec3_3_simple_attention", "sec3_3-weights-shape", probe="sec3_3-weights-values")
def _(m, torch):
    expect_tensor("attention_weights(inputs)", m.attention_weights(book_inputs(torch)), torch, (6, 6))


@check("sec3_3_simple_attention", "sec3_3-weights-rows", probe="sec3_3-weights-values")
def _(m, torch):
    weights = expect_tensor("attention_weights(inputs)", m.attention_weights(book_inputs(torch)), torch, (6, 6))
    expect_close("attention_weights(inputs).sum(dim=-1)", weights.sum(dim=-1), torch.ones(6), torch)


@check("sec3_3_simple_attention", "sec3_3-context-shape", probe="sec3_3-context-values")
def _(m, torch):
    expect_tensor("context_vectors(inputs)", m.context_vectors(book_inputs(torch)), torch, (6, 3))


# -- 3.4 ------------------------------------------------------------------------------------------
@check("sec3_4_self_attention", "sec3_4-qkv-shapes", probe="sec3_4-qkv-values")
def _(m, torch):
    out = m.project_qkv(torch.rand(5, 3), torch.rand(3, 4), torch.rand(3, 4), torch.rand(3, 4))
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise Mismatch(
            "project_qkv(x, W_query, W_key, W_value)",
            phrase("three-tensors"),
            phrase("a-type", type=type(out).__name__),
        )
    for name, tensor in zip(("queries", "keys", "values"), out):
        expect_tensor(f"project_qkv(...) {name}", tensor, torch, (5, 4))


@check("sec3_4_self_attention", "sec3_4-weights-rows", probe="sec3_4-weights-values")
def _(m, torch):
    weights = expect_tensor(
        "scaled_attention_weights(queries, keys)",
        m.scaled_attention_weights(torch.rand(5, 4), torch.rand(5, 4)),
        torch,
        (5, 5),
    )
    expect_close("scaled_attention_weights(queries, keys).sum(dim=-1)", weights.sum(dim=-1), torch.ones(5), torch)


@check("sec3_4_self_attention", "sec3_4-v2-shape", probe="sec3_4-v2-values")
def _(m, torch):
    sa = without_bias("SelfAttention_v2(3, 2)", m.SelfAttention_v2(3, 2))
    expect_tensor("SelfAttention_v2(3, 2)(inputs)", sa(book_inputs(torch)), torch, (6, 2))


# -- Exercise 3.1 ---------------------------------------------------------------------------------
def transfer_shells(torch, d_in, d_out, seed):
    """What transfer_weights reads and writes, as plain modules with the contract's attributes: three
    nn.Linear(d_in, d_out) layers with known weights (SelfAttention_v2's), three (d_in, d_out)
    parameters (SelfAttention_v1's). As in the grader, Exercise 3.1 does not run the 3.4 classes:
    a mistake there is 3.4's (docs/grading-policy.md)."""
    generator = torch.Generator().manual_seed(seed)
    sa_v2, sa_v1 = torch.nn.Module(), torch.nn.Module()
    for name in ("W_query", "W_key", "W_value"):
        layer = torch.nn.Linear(d_in, d_out, bias=False)
        with torch.no_grad():
            layer.weight.copy_(torch.rand(d_out, d_in, generator=generator) - 0.5)
        setattr(sa_v2, name, layer)
        setattr(sa_v1, name, torch.nn.Parameter(torch.rand(d_in, d_out, generator=generator)))
    return sa_v2, sa_v1


@check("exercise3_1_weight_transfer", "ex3_1-same-output", probe="ex3_1-values")
def _(m, torch):
    sa_v2, sa_v1 = transfer_shells(torch, 4, 4, seed=31)
    m.transfer_weights(sa_v2, sa_v1)
    x = torch.rand(5, 4)
    with torch.no_grad():
        try:
            for name in ("W_query", "W_key", "W_value"):
                expect_tensor(f"sa_v1.{name}", getattr(sa_v1, name, None), torch, (4, 4))
                what = f"x @ sa_v1.{name} - sa_v2.{name}(x)"
                expect_unchanged(what, x @ getattr(sa_v1, name), getattr(sa_v2, name)(x), torch, atol=1e-4)
        except Mismatch as exc:
            exc.cause = transfer_mistake(sa_v1, sa_v2, torch)
            raise


def transfer_mistake(sa_v1, sa_v2, torch):
    """The catalogued mistake a transfer shows, if any: sa_v1's matrices are sa_v2's weights as nn.Linear
    keeps them (not transposed), or transposed but in each other's places."""
    names = ("W_query", "W_key", "W_value")
    try:
        copied = [getattr(sa_v1, name).detach() for name in names]
        weights = [getattr(sa_v2, name).weight.detach() for name in names]
    except Exception:  # noqa: BLE001 - code of another shape: no name for it
        return None

    def same(a, b):
        return a.shape == b.shape and bool(torch.allclose(a, b))

    if all(same(c, w) for c, w in zip(copied, weights)) and not all(same(c, w.T) for c, w in zip(copied, weights)):
        return "weights-not-transposed"
    sources = [next((j for j, w in enumerate(weights) if same(c, w.T)), None) for c in copied]
    if None not in sources and sources != [0, 1, 2]:
        return "weights-swapped"
    return None


# -- 3.5 ------------------------------------------------------------------------------------------
@check("sec3_5_causal_attention", "sec3_5-simple-mask")
def _(m, torch):
    expected = torch.tensor([[1.0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    expect_close("simple_causal_mask(4)", m.simple_causal_mask(4), expected, torch)


def _masked_rows(what, weights, torch):
    weights = expect_tensor(what, weights, torch, (5, 5))
    expect_close(f"{what}.triu(1)", weights.triu(1), torch.zeros(5, 5), torch)
    expect_close(f"{what}.sum(dim=-1)", weights.sum(dim=-1), torch.ones(5), torch)


@check("sec3_5_causal_attention", "sec3_5-renormalize", probe="sec3_5-renormalize-values")
def _(m, torch):
    _masked_rows("mask_and_renormalize(w)", m.mask_and_renormalize(torch.softmax(torch.rand(5, 5), dim=-1)), torch)


@check("sec3_5_causal_attention", "sec3_5-masked-weights", probe="sec3_5-masked-weights-values")
def _(m, torch):
    _masked_rows("masked_attention_weights(scores, 4)", m.masked_attention_weights(torch.rand(5, 5), 4), torch)


@check("sec3_5_causal_attention", "sec3_5-shape", probe="sec3_5-values")
def _(m, torch):
    ca = without_bias("CausalAttention(3, 2, 6, 0.0)", m.CausalAttention(3, 2, 6, 0.0)).eval()
    expect_tensor("CausalAttention(3, 2, 6, 0.0)(batch)", ca(torch.stack([book_inputs(torch)] * 2)), torch, (2, 6, 2))


@check("sec3_5_causal_attention", "sec3_5-causal", probe="sec3_5-values")
def _(m, torch):
    ca = m.CausalAttention(3, 2, 8, 0.0).eval()
    x = torch.rand(3, 5, 3)
    changed = x.clone()
    changed[:, -1] = torch.rand(3, 3)
    with torch.no_grad():
        before = expect_tensor("ca(x)", ca(x), torch, (3, 5, 2))
        expect_unchanged("ca(x_changed)[:, :-1]", ca(changed)[:, :-1], before[:, :-1], torch)


# -- 3.6 ------------------------------------------------------------------------------------------
@check("sec3_6_multi_head_attention", "sec3_6-wrapper-shape", probe="sec3_6-wrapper-values")
def _(m, torch):
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).eval()
    expect_tensor(
        "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)",
        mha(torch.stack([book_inputs(torch)] * 2)),
        torch,
        (2, 6, 4),
    )


@check("sec3_6_multi_head_attention", "sec3_6-mha-shape", probe="sec3_6-mha-values")
def _(m, torch):
    mha = m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)
    mha = without_bias("MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)", mha).eval()
    expect_tensor("MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)(x)", mha(torch.rand(3, 5, 3)), torch, (3, 5, 4))


@check("sec3_6_multi_head_attention", "sec3_6-mha-raises")
def _(m, torch):
    expect_refusal(
        "MultiHeadAttention(3, 5, 8, 0.0, num_heads=2)",
        lambda: m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2),
        lambda: m.MultiHeadAttention(3, 5, 8, 0.0, num_heads=2),
    )


# -- Exercises 3.2 and 3.3 ------------------------------------------------------------------------
@check("exercise3_2_two_dim_output", "ex3_2-shape", probe="ex3_2-book")
def _(m, torch):
    mha = m.build_two_dim_wrapper(3, 6).eval()
    heads = [getattr(getattr(head, "W_query", None), "out_features", None) for head in getattr(mha, "heads", [])]
    what = "[head.W_query.out_features for head in build_two_dim_wrapper(3, 6).heads]"
    expect_equal(what, heads, [1, 1], "wrong-config")  # two heads of one dimension each
    expect_tensor("build_two_dim_wrapper(3, 6)(batch)", mha(torch.stack([book_inputs(torch)] * 2)), torch, (2, 6, 2))


@check("exercise3_3_gpt2_attention", "ex3_3-config", probe="ex3_3-book")
def _(m, torch):
    mha = m.build_gpt2_small_attention().eval()
    expect_equal("build_gpt2_small_attention().num_heads", getattr(mha, "num_heads", None), 12, "wrong-config")
    expect_equal("build_gpt2_small_attention().head_dim", getattr(mha, "head_dim", None), 64, "wrong-config")
    d_in = getattr(getattr(mha, "W_query", None), "in_features", None)
    expect_equal("build_gpt2_small_attention().W_query.in_features", d_in, 768, "wrong-config")
    with torch.no_grad():
        expect_tensor("build_gpt2_small_attention()(x)", mha(torch.rand(1, 4, 768)), torch, (1, 4, 768))
