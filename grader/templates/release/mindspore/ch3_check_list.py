"""Chapter 3 public checks, MindSpore edition: the PyTorch edition's checks in MindSpore terms (nn.Cell,
set_train, ops.*, axis=), run and reported by the same ch3_checks.py, with a hint for MindSpore's
own traps (positional nn.Dropout is keep_prob, dim= for axis=, .eval() on a Cell, a trainable
mask). They are public on purpose and catch only the first mistakes: the grader checks much more.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
from ch3_check_sections import BOOK_ORDER
from ch3_check_tools import CheckList, Mismatch, expect_refusal, fmt, phrase

MODULES = BOOK_ORDER  # the sections in the book's order (ch3_check_sections.py, the kit's manifest)
VALUE_CHECKS = None  # no value checks in this edition yet
CHECKS = CheckList()
check = CHECKS.check
# (pattern of "ErrorType: message", hint key): PyTorch habits MindSpore answers with an error.
HINTS = (
    (r"'keep_prob' must be", "dropout-keep-prob"),
    (r"unexpected keyword argument '(dim|keepdim)'", "dim-not-axis"),
    (
        r"has no attribute '(eval|train|forward|parameters|named_parameters|masked_fill_)'"
        r"|the method 'construct' is not defined",
        "torch-api",
    ),
    (r"kernel DropoutExt unregistered", "mint-dropout-cpu"),  # mint's dropout has no CPU kernel (MindSpore 2.10)
)
BOOK = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]


def framework():
    """mindspore, on the CPU and quiet. A student's leftover `set_context(device_target="Ascend")`
    (the port runs on Ascend) would raise on a CPU: as in the grader, it costs nothing."""
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's log level is read at its import: errors only
    import mindspore
    import mindspore.context as context

    try:
        mindspore.set_device("CPU")
    except RuntimeError:  # an op ran already: the runtime runs, on the CPU
        pass
    original = context.set_context
    if not getattr(original, "_kept_on_cpu", False):

        def set_context(*args, **kwargs):
            for key in ("device_target", "device_id", "mode"):
                kwargs.pop(key, None)
            return original(*args, **kwargs) if (args or kwargs) else None

        set_context._kept_on_cpu = True
        context.set_context = mindspore.set_context = set_context
        mindspore.set_device = lambda *args, **kwargs: None
    return mindspore


@contextlib.contextmanager
def seeded(ms):
    """Each check starts from mindspore.set_seed(0); the inputs come from NumPy's seeded generators."""
    ms.set_seed(0)
    yield


# -- inputs and expectations ----------------------------------------------------------------------
def tensor(ms, values):
    return ms.Tensor(np.asarray(values, np.float32))


def rand(ms, *shape, seed=0):
    return tensor(ms, np.random.default_rng(seed + sum(shape)).random(shape))


def book_inputs(ms, batch=False):
    return tensor(ms, [BOOK, BOOK] if batch else BOOK)


def array(what, value, ms, shape=None):
    """The student's mindspore.Tensor as a NumPy array, if it is one of the expected shape."""
    if not isinstance(value, ms.Tensor):
        raise Mismatch(what, phrase("a-tensor"), phrase("a-type", type=type(value).__name__))
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Mismatch(f"{what}.shape", fmt(tuple(shape)), fmt(tuple(value.shape)))
    return value.asnumpy().astype(np.float64)


def expect_equal(what, actual, expected):
    if actual != expected:
        raise Mismatch(what, fmt(expected), fmt(actual))


def expect_close(what, actual, expected, atol=1e-4):
    """Values within `atol` (`actual` has `expected`'s shape); a mismatch names the first differing row (or entry)."""
    expected = np.asarray(expected, np.float64)
    bad = ~np.isclose(actual, expected, atol=atol, rtol=0)
    if not bad.any():
        return
    if actual.size <= 6:
        raise Mismatch(what, fmt(expected), fmt(actual))
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    row = index[:-1] if actual.shape[-1] <= 6 else index
    raise Mismatch(f"{what}[{', '.join(map(str, row))}]", fmt(expected[row]), fmt(actual[row]))


def expect_unchanged(what, after, before, atol=1e-5, hint=None):
    """`after` (of `before`'s shape, as `array` made sure) equals `before` within `atol`."""
    if np.isnan(after).any() or np.isnan(before).any():
        raise Mismatch(what, phrase("unchanged"), phrase("nan"), hint)
    difference = float(np.abs(after - before).max()) if after.size else 0.0
    if not difference <= atol:
        raise Mismatch(what, phrase("unchanged"), phrase("differs-by", value=fmt(difference)), hint)


def inference(cell):
    cell.set_train(False)
    return cell


def expect_untrained_mask(what, cell, size):
    """No trainable parameter of `cell` has the mask's (size, size) shape (no weight has it here)."""
    names = [p.name for p in cell.trainable_params() if tuple(p.shape) == (size, size)]
    if names:
        raise Mismatch(what, "[]", f"[{', '.join(map(repr, names))}]", hint="mask-trainable")


# -- 3.3 ------------------------------------------------------------------------------------------
@check("sec3_3_simple_attention", "sec3_3-softmax")
def _(m, ms):
    x = tensor(ms, [[0.2, -1.0, 3.0, 0.5], [1.0, 2.0, 0.0, -0.5], [0.3, 0.3, 0.1, 0.9]])
    out = array("softmax_naive(x)", m.softmax_naive(x), ms, (3, 4))
    expect_close("softmax_naive(x).sum(axis=-1)", out.sum(-1), np.ones(3))
    if not (out > 0).all():
        raise Mismatch("softmax_naive(x).min()", "> 0", fmt(float(out.min())))


@check("sec3_3_simple_attention", "sec3_3-weights-shape")
def _(m, ms):
    array("attention_weights(inputs)", m.attention_weights(book_inputs(ms)), ms, (6, 6))


@check("sec3_3_simple_attention", "sec3_3-weights-rows")
def _(m, ms):
    weights = array("attention_weights(inputs)", m.attention_weights(book_inputs(ms)), ms, (6, 6))
    expect_close("attention_weights(inputs).sum(axis=-1)", weights.sum(-1), np.ones(6))


@check("sec3_3_simple_attention", "sec3_3-context-shape")
def _(m, ms):
    array("context_vectors(inputs)", m.context_vectors(book_inputs(ms)), ms, (6, 3))


# -- 3.4 ------------------------------------------------------------------------------------------
@check("sec3_4_self_attention", "sec3_4-qkv-shapes")
def _(m, ms):
    out = m.project_qkv(rand(ms, 5, 3), rand(ms, 3, 4), rand(ms, 3, 4, seed=1), rand(ms, 3, 4, seed=2))
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise Mismatch(
            "project_qkv(x, W_query, W_key, W_value)",
            phrase("three-tensors"),
            phrase("a-type", type=type(out).__name__),
        )
    for name, value in zip(("queries", "keys", "values"), out):
        array(f"project_qkv(...) {name}", value, ms, (5, 4))


@check("sec3_4_self_attention", "sec3_4-weights-rows")
def _(m, ms):
    weights = array(
        "scaled_attention_weights(queries, keys)",
        m.scaled_attention_weights(rand(ms, 5, 4), rand(ms, 5, 4, seed=1)),
        ms,
        (5, 5),
    )
    expect_close("scaled_attention_weights(queries, keys).sum(axis=-1)", weights.sum(-1), np.ones(5))


@check("sec3_4_self_attention", "sec3_4-v1-book")
def _(m, ms):
    ms.set_seed(123)
    out = array("SelfAttention_v1(3, 2)(inputs)", m.SelfAttention_v1(3, 2)(book_inputs(ms)), ms, (6, 2))
    expect_close("SelfAttention_v1(3, 2)(inputs)[0]", out[0], [0.5698, 0.3587], atol=1e-3)


@check("sec3_4_self_attention", "sec3_4-v2-shape")
def _(m, ms):
    array("SelfAttention_v2(3, 2)(inputs)", m.SelfAttention_v2(3, 2)(book_inputs(ms)), ms, (6, 2))


# -- Exercise 3.1 ---------------------------------------------------------------------------------
def transfer_shells(ms, d_in, d_out, seed):
    """What transfer_weights reads and writes, as plain Cells with the contract's attributes: three
    nn.Dense(d_in, d_out) layers with known weights (SelfAttention_v2's), three (d_in, d_out)
    Parameters (SelfAttention_v1's). As in the grader, Exercise 3.1 does not run the 3.4 classes:
    a mistake there is 3.4's (docs/grading-policy.md)."""
    generator = np.random.default_rng(seed)
    sa_v2, sa_v1 = ms.nn.Cell(), ms.nn.Cell()
    for name in ("W_query", "W_key", "W_value"):
        weight = tensor(ms, generator.random((d_out, d_in)) - 0.5)
        setattr(sa_v2, name, ms.nn.Dense(d_in, d_out, weight_init=weight, has_bias=False))
        setattr(sa_v1, name, ms.Parameter(tensor(ms, generator.random((d_in, d_out))), name=name))
    return sa_v2, sa_v1


@check("exercise3_1_weight_transfer", "ex3_1-same-output")
def _(m, ms):
    sa_v2, sa_v1 = transfer_shells(ms, 4, 4, seed=31)
    m.transfer_weights(sa_v2, sa_v1)
    x = rand(ms, 5, 4)
    for name in ("W_query", "W_key", "W_value"):
        copied = array(f"sa_v1.{name}", getattr(sa_v1, name, None), ms, (4, 4))
        expect_unchanged(
            f"x @ sa_v1.{name} - sa_v2.{name}(x)",
            x.asnumpy().astype(np.float64) @ copied,
            array(f"sa_v2.{name}(x)", getattr(sa_v2, name)(x), ms, (5, 4)),
            atol=1e-4,
            hint="weights-not-transposed" if _untransposed(sa_v1, sa_v2) else None,
        )


def _untransposed(sa_v1, sa_v2):
    """W_query copied as nn.Dense keeps it, (d_out, d_in), where SelfAttention_v1 computes x @ W (d_in, d_out)."""
    try:
        copied, dense = sa_v1.W_query.asnumpy(), sa_v2.W_query.weight.asnumpy()
        return copied.shape == dense.shape and np.allclose(copied, dense) and not np.allclose(copied, copied.T)
    except Exception:  # noqa: BLE001 - only a hint: code of another shape gets none
        return False


# -- 3.5 ------------------------------------------------------------------------------------------
@check("sec3_5_causal_attention", "sec3_5-simple-mask")
def _(m, ms):
    expect_close(
        "simple_causal_mask(4)",
        array("simple_causal_mask(4)", m.simple_causal_mask(4), ms, (4, 4)),
        np.tril(np.ones((4, 4))),
    )


def _masked_rows(what, weights, ms):
    weights = array(what, weights, ms, (5, 5))
    expect_close(f"ops.triu({what}, 1)", np.triu(weights, 1), np.zeros((5, 5)))
    expect_close(f"{what}.sum(axis=-1)", weights.sum(-1), np.ones(5))


@check("sec3_5_causal_attention", "sec3_5-renormalize")
def _(m, ms):
    weights = np.random.default_rng(5).random((5, 5))
    weights = weights / weights.sum(-1, keepdims=True)  # rows sum to 1, as after ops.softmax
    out = m.mask_and_renormalize(tensor(ms, weights))
    _masked_rows("mask_and_renormalize(w)", out, ms)
    kept = np.tril(weights)  # each row keeps the proportions of its weights on and below the diagonal
    expect_close(
        "mask_and_renormalize(w)", array("mask_and_renormalize(w)", out, ms), kept / kept.sum(-1, keepdims=True)
    )


@check("sec3_5_causal_attention", "sec3_5-masked-weights")
def _(m, ms):
    _masked_rows("masked_attention_weights(scores, 4)", m.masked_attention_weights(rand(ms, 5, 5), 4), ms)


@check("sec3_5_causal_attention", "sec3_5-shape")
def _(m, ms):
    ca = inference(m.CausalAttention(3, 2, 6, 0.0))
    array("CausalAttention(3, 2, 6, 0.0)(batch)", ca(book_inputs(ms, batch=True)), ms, (2, 6, 2))


@check("sec3_5_causal_attention", "sec3_5-causal")
def _(m, ms):
    ca = inference(m.CausalAttention(3, 2, 8, 0.0))
    x = rand(ms, 3, 5, 3).asnumpy()
    changed = x.copy()
    changed[:, -1] = np.random.default_rng(1).random((3, 3))
    before = array("ca(x)", ca(ms.Tensor(x)), ms, (3, 5, 2))
    after = array("ca(x_changed)", ca(ms.Tensor(changed)), ms, (3, 5, 2))
    expect_unchanged("ca(x_changed)[:, :-1]", after[:, :-1], before[:, :-1])


@check("sec3_5_causal_attention", "sec3_5-dropout-keyword")
def _(m, ms):
    ca = m.CausalAttention(3, 2, 6, 0.1)
    dropout = getattr(ca, "dropout", None)
    if dropout is None:
        raise Mismatch("CausalAttention(3, 2, 6, 0.1).dropout", phrase("an-nn-dropout"), phrase("no-attribute"))
    ca.set_train(True)
    what = "CausalAttention(3, 2, 6, 0.1).dropout(ops.ones(4000))"
    out = array(what, dropout(ms.ops.ones((4000,), ms.float32)), ms, (4000,))
    dropped = float((out == 0).mean())  # about 0.1 with p=0.1; about 0.9 with a positional keep_prob
    if not 0.05 < dropped < 0.15:
        raise Mismatch(
            f"({what} == 0).mean()",
            phrase("about", value="0.1"),
            fmt(dropped),
            hint="dropout-keep-prob" if dropped > 0.5 else None,
        )
    kept = out[out != 0]
    expect_close(f"{what}[kept]", kept, np.full(kept.shape, 1 / 0.9))  # scaled by 1 / (1 - p)


@check("sec3_5_causal_attention", "sec3_5-mask-buffer")
def _(m, ms):
    expect_untrained_mask(
        "[p.name for p in CausalAttention(3, 2, 7, 0.0).trainable_params() if p.shape == (7, 7)]",
        m.CausalAttention(3, 2, 7, 0.0),
        7,
    )


# -- 3.6 ------------------------------------------------------------------------------------------
@check("sec3_6_multi_head_attention", "sec3_6-wrapper-shape")
def _(m, ms):
    mha = inference(m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2))
    array(
        "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)", mha(book_inputs(ms, batch=True)), ms, (2, 6, 4)
    )


@check("sec3_6_multi_head_attention", "sec3_6-mha-shape")
def _(m, ms):
    mha = inference(m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2))
    array("MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)(x)", mha(rand(ms, 3, 5, 3)), ms, (3, 5, 4))


@check("sec3_6_multi_head_attention", "sec3_6-mha-raises")
def _(m, ms):
    expect_refusal(
        "MultiHeadAttention(3, 5, 8, 0.0, num_heads=2)",
        lambda: m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2),
        lambda: m.MultiHeadAttention(3, 5, 8, 0.0, num_heads=2),
    )


@check("sec3_6_multi_head_attention", "sec3_6-mask-buffer")
def _(m, ms):
    expect_untrained_mask(
        "[p.name for p in MultiHeadAttention(3, 4, 7, 0.0, num_heads=2).trainable_params() if p.shape == (7, 7)]",
        m.MultiHeadAttention(3, 4, 7, 0.0, num_heads=2),
        7,
    )


# -- Exercises 3.2 and 3.3 ------------------------------------------------------------------------
@check("exercise3_2_two_dim_output", "ex3_2-shape")
def _(m, ms):
    mha = inference(m.build_two_dim_wrapper(3, 6))
    array("build_two_dim_wrapper(3, 6)(batch)", mha(book_inputs(ms, batch=True)), ms, (2, 6, 2))


@check("exercise3_3_gpt2_attention", "ex3_3-config")
def _(m, ms):
    mha = m.build_gpt2_small_attention()
    expect_equal("build_gpt2_small_attention().num_heads", getattr(mha, "num_heads", None), 12)
    expect_equal("build_gpt2_small_attention().head_dim", getattr(mha, "head_dim", None), 64)
    inference(mha)
    array("build_gpt2_small_attention()(x)", mha(rand(ms, 1, 4, 768)), ms, (1, 4, 768))
