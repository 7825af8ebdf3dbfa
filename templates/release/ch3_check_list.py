"""Chapter 3 public checks, PyTorch edition: what is checked, section by section, and how a failure is said.

Each check calls the student's code through `m` (a module, or a notebook's namespace) and raises
Mismatch(what, expected, actual) when something is not as the exercise asks: `what` is code (the
same in every language), `expected` and `actual` are values or phrases of check_messages.json.
ch3_checks.py runs them and reports. These checks are public on purpose and catch only the first
mistakes: the grader checks much more.
"""

from __future__ import annotations

import contextlib
import warnings

from ch3_check_tools import CheckList, Mismatch, expect_refusal, fmt, phrase

MODULES = (
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "exercise3_1_weight_transfer",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
)
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
    """Each check starts from seed 0 and leaves the caller's random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        yield


def expect_tensor(what, value, torch, shape=None):
    if not isinstance(value, torch.Tensor):
        raise Mismatch(what, phrase("a-tensor"), phrase("a-type", type=type(value).__name__))
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Mismatch(f"{what}.shape", fmt(tuple(shape)), fmt(tuple(value.shape)))
    return value


def expect_equal(what, actual, expected):
    if actual != expected:
        raise Mismatch(what, fmt(expected), fmt(actual))


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
@check("sec3_3_simple_attention", "sec3_3-softmax")
def _(m, torch):
    x = torch.tensor([[0.2, -1.0, 3.0, 0.5], [1.0, 2.0, 0.0, -0.5], [0.3, 0.3, 0.1, 0.9]])
    out = expect_tensor("softmax_naive(x)", m.softmax_naive(x), torch, (3, 4))
    expect_close("softmax_naive(x).sum(dim=-1)", out.sum(dim=-1), torch.ones(3), torch)
    if not bool((out > 0).all()):
        raise Mismatch("softmax_naive(x).min()", "> 0", fmt(float(out.min())))


@check("sec3_3_simple_attention", "sec3_3-weights-shape")
def _(m, torch):
    expect_tensor("attention_weights(inputs)", m.attention_weights(book_inputs(torch)), torch, (6, 6))


@check("sec3_3_simple_attention", "sec3_3-weights-rows")
def _(m, torch):
    weights = expect_tensor("attention_weights(inputs)", m.attention_weights(book_inputs(torch)), torch, (6, 6))
    expect_close("attention_weights(inputs).sum(dim=-1)", weights.sum(dim=-1), torch.ones(6), torch)


@check("sec3_3_simple_attention", "sec3_3-context-shape")
def _(m, torch):
    expect_tensor("context_vectors(inputs)", m.context_vectors(book_inputs(torch)), torch, (6, 3))


# -- 3.4 ------------------------------------------------------------------------------------------
@check("sec3_4_self_attention", "sec3_4-qkv-shapes")
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


@check("sec3_4_self_attention", "sec3_4-weights-rows")
def _(m, torch):
    weights = expect_tensor(
        "scaled_attention_weights(queries, keys)",
        m.scaled_attention_weights(torch.rand(5, 4), torch.rand(5, 4)),
        torch,
        (5, 5),
    )
    expect_close("scaled_attention_weights(queries, keys).sum(dim=-1)", weights.sum(dim=-1), torch.ones(5), torch)


@check("sec3_4_self_attention", "sec3_4-v1-book")
def _(m, torch):
    torch.manual_seed(123)
    out = expect_tensor("SelfAttention_v1(3, 2)(inputs)", m.SelfAttention_v1(3, 2)(book_inputs(torch)), torch, (6, 2))
    expect_close("SelfAttention_v1(3, 2)(inputs)[0]", out[0], torch.tensor([0.2996, 0.8053]), torch, atol=1e-3)


@check("sec3_4_self_attention", "sec3_4-v2-shape")
def _(m, torch):
    expect_tensor("SelfAttention_v2(3, 2)(inputs)", m.SelfAttention_v2(3, 2)(book_inputs(torch)), torch, (6, 2))


# -- Exercise 3.1 ---------------------------------------------------------------------------------
@check("exercise3_1_weight_transfer", "ex3_1-same-output")
def _(m, torch):
    sa = m._sibling("sec3_4_self_attention")
    sa_v2, sa_v1 = sa.SelfAttention_v2(4, 4), sa.SelfAttention_v1(4, 4)
    m.transfer_weights(sa_v2, sa_v1)
    x = torch.rand(5, 4)
    with torch.no_grad():
        expect_unchanged("sa_v1(x) - sa_v2(x)", sa_v1(x), sa_v2(x), torch, atol=1e-4)


# -- 3.5 ------------------------------------------------------------------------------------------
@check("sec3_5_causal_attention", "sec3_5-simple-mask")
def _(m, torch):
    expected = torch.tensor([[1.0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    expect_close("simple_causal_mask(4)", m.simple_causal_mask(4), expected, torch)


def _masked_rows(what, weights, torch):
    weights = expect_tensor(what, weights, torch, (5, 5))
    expect_close(f"{what}.triu(1)", weights.triu(1), torch.zeros(5, 5), torch)
    expect_close(f"{what}.sum(dim=-1)", weights.sum(dim=-1), torch.ones(5), torch)


@check("sec3_5_causal_attention", "sec3_5-renormalize")
def _(m, torch):
    _masked_rows("mask_and_renormalize(w)", m.mask_and_renormalize(torch.softmax(torch.rand(5, 5), dim=-1)), torch)


@check("sec3_5_causal_attention", "sec3_5-masked-weights")
def _(m, torch):
    _masked_rows("masked_attention_weights(scores, 4)", m.masked_attention_weights(torch.rand(5, 5), 4), torch)


@check("sec3_5_causal_attention", "sec3_5-shape")
def _(m, torch):
    ca = m.CausalAttention(3, 2, 6, 0.0).eval()
    expect_tensor("CausalAttention(3, 2, 6, 0.0)(batch)", ca(torch.stack([book_inputs(torch)] * 2)), torch, (2, 6, 2))


@check("sec3_5_causal_attention", "sec3_5-causal")
def _(m, torch):
    ca = m.CausalAttention(3, 2, 8, 0.0).eval()
    x = torch.rand(3, 5, 3)
    changed = x.clone()
    changed[:, -1] = torch.rand(3, 3)
    with torch.no_grad():
        before = expect_tensor("ca(x)", ca(x), torch, (3, 5, 2))
        expect_unchanged("ca(x_changed)[:, :-1]", ca(changed)[:, :-1], before[:, :-1], torch)


# -- 3.6 ------------------------------------------------------------------------------------------
@check("sec3_6_multi_head_attention", "sec3_6-wrapper-shape")
def _(m, torch):
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).eval()
    expect_tensor(
        "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)",
        mha(torch.stack([book_inputs(torch)] * 2)),
        torch,
        (2, 6, 4),
    )


@check("sec3_6_multi_head_attention", "sec3_6-mha-shape")
def _(m, torch):
    mha = m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2).eval()
    expect_tensor("MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)(x)", mha(torch.rand(3, 5, 3)), torch, (3, 5, 4))


@check("sec3_6_multi_head_attention", "sec3_6-mha-raises")
def _(m, torch):
    expect_refusal(
        "MultiHeadAttention(3, 5, 8, 0.0, num_heads=2)",
        lambda: m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2),
        lambda: m.MultiHeadAttention(3, 5, 8, 0.0, num_heads=2),
    )


# -- Exercises 3.2 and 3.3 ------------------------------------------------------------------------
@check("exercise3_2_two_dim_output", "ex3_2-shape")
def _(m, torch):
    mha = m.build_two_dim_wrapper(3, 6).eval()
    expect_tensor("build_two_dim_wrapper(3, 6)(batch)", mha(torch.stack([book_inputs(torch)] * 2)), torch, (2, 6, 2))


@check("exercise3_3_gpt2_attention", "ex3_3-config")
def _(m, torch):
    mha = m.build_gpt2_small_attention().eval()
    expect_equal("build_gpt2_small_attention().num_heads", getattr(mha, "num_heads", None), 12)
    expect_equal("build_gpt2_small_attention().head_dim", getattr(mha, "head_dim", None), 64)
    with torch.no_grad():
        expect_tensor("build_gpt2_small_attention()(x)", mha(torch.rand(1, 4, 768)), torch, (1, 4, 768))
