"""The reference solutions reproduce the tensors printed in Chapter 3 of the book.

Expected values are the book's printed outputs (4 decimals), written out in full.
"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from solutions.exercise3_1_weight_transfer import transfer_weights
from solutions.exercise3_2_two_dim_output import build_two_dim_wrapper
from solutions.exercise3_3_gpt2_attention import build_gpt2_small_attention
from solutions.sec3_3_simple_attention import (
    attention_scores,
    attention_scores_for_query,
    attention_weights,
    context_vector_for_query,
    context_vectors,
    softmax_naive,
)
from solutions.sec3_4_self_attention import SelfAttention_v1, SelfAttention_v2, project_qkv, scaled_attention_weights
from solutions.sec3_5_causal_attention import (
    CausalAttention,
    mask_and_renormalize,
    masked_attention_weights,
    simple_causal_mask,
)
from solutions.sec3_6_multi_head_attention import MultiHeadAttention, MultiHeadAttentionWrapper


def assert_book(actual, expected):
    """Equal to the book's printout at 4 decimals."""
    expected = torch.tensor(expected)
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.detach(), expected, atol=1e-4, rtol=0)


@pytest.fixture
def inputs():
    return torch.tensor(
        [
            [0.43, 0.15, 0.89],  # Your     (x^1)
            [0.55, 0.87, 0.66],  # journey  (x^2)
            [0.57, 0.85, 0.64],  # starts   (x^3)
            [0.22, 0.58, 0.33],  # with     (x^4)
            [0.77, 0.25, 0.10],  # one      (x^5)
            [0.05, 0.80, 0.55],
        ]  # step     (x^6)
    )


@pytest.fixture
def batch(inputs):
    return torch.stack((inputs, inputs), dim=0)  # (2, 6, 3)


def batched(rows):
    """The book's batch holds the same sequence twice, so both outputs are equal."""
    return [rows, rows]


# ---------------------------------------------------------------- 3.3

ATTN_SCORES = [
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]

ATTN_WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]

CONTEXT_VECS = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]


def test_3_3_scores_for_query_2(inputs):
    assert_book(attention_scores_for_query(inputs, 1), [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])


def test_3_3_softmax_naive_for_query_2(inputs):
    weights = softmax_naive(attention_scores_for_query(inputs, 1))
    assert_book(weights, [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    torch.testing.assert_close(weights.sum(), torch.tensor(1.0))


def test_3_3_softmax_naive_normalises_last_dim(inputs):
    assert_book(softmax_naive(inputs @ inputs.T), ATTN_WEIGHTS)


def test_3_3_context_vector_for_query_2(inputs):
    assert_book(context_vector_for_query(inputs, 1), [0.4419, 0.6515, 0.5683])


def test_3_3_attention_scores(inputs):
    assert_book(attention_scores(inputs), ATTN_SCORES)


def test_3_3_attention_weights(inputs):
    weights = attention_weights(inputs)
    assert_book(weights, ATTN_WEIGHTS)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(6))


def test_3_3_context_vectors(inputs):
    assert_book(context_vectors(inputs), CONTEXT_VECS)


# ---------------------------------------------------------------- 3.4


def test_3_4_1_step_by_step(inputs):
    torch.manual_seed(123)
    W_query = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
    W_key = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
    W_value = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)

    queries, keys, values = project_qkv(inputs, W_query, W_key, W_value)
    assert queries.shape == keys.shape == values.shape == (6, 2)
    assert_book(queries[1], [0.4306, 1.4551])  # query_2
    assert_book(queries[1] @ keys.T, [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])

    weights_2 = [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]
    assert_book(scaled_attention_weights(queries[1], keys), weights_2)  # a single query
    weights = scaled_attention_weights(queries, keys)
    assert weights.shape == (6, 6)
    assert_book(weights[1], weights_2)
    assert_book(weights[1] @ values, [0.3061, 0.8210])  # context_vec_2


def test_3_4_2_self_attention_v1(inputs):
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    assert_book(
        sa_v1(inputs),
        [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]],
    )


SA_V2_WEIGHTS = [
    [0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
    [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
    [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
    [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
    [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
]


def test_3_4_2_self_attention_v2(inputs):
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    assert_book(
        sa_v2(inputs),
        [
            [-0.0739, 0.0713],
            [-0.0748, 0.0703],
            [-0.0749, 0.0702],
            [-0.0760, 0.0685],
            [-0.0763, 0.0679],
            [-0.0754, 0.0693],
        ],
    )
    # start of 3.5.1: the attention weights of sa_v2's query and key layers
    weights = scaled_attention_weights(sa_v2.W_query(inputs), sa_v2.W_key(inputs))
    assert_book(weights, SA_V2_WEIGHTS)


def test_3_4_2_qkv_bias():
    assert SelfAttention_v2(3, 2).W_query.bias is None
    assert SelfAttention_v2(3, 2, qkv_bias=True).W_query.bias is not None


# ---------------------------------------------------------------- 3.5

CAUSAL_WEIGHTS = [
    [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
    [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
]


@pytest.fixture
def sa_v2_scores(inputs):
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    with torch.no_grad():
        return sa_v2.W_query(inputs) @ sa_v2.W_key(inputs).T  # (6, 6)


def test_3_5_1_simple_causal_mask():
    assert_book(
        simple_causal_mask(6),
        [
            [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
            [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        ],
    )


def test_3_5_1_mask_and_renormalize(sa_v2_scores):
    weights = torch.softmax(sa_v2_scores / 2**0.5, dim=-1)
    assert_book(weights, SA_V2_WEIGHTS)
    assert_book(mask_and_renormalize(weights), CAUSAL_WEIGHTS)


def test_3_5_1_masked_attention_weights(sa_v2_scores):
    scores_before = sa_v2_scores.clone()
    assert_book(masked_attention_weights(sa_v2_scores, 2), CAUSAL_WEIGHTS)
    torch.testing.assert_close(sa_v2_scores, scores_before)  # input left untouched


def test_3_5_1_masked_attention_weights_batched(sa_v2_scores):
    out = masked_attention_weights(torch.stack((sa_v2_scores, sa_v2_scores)), 2)
    assert_book(out, [CAUSAL_WEIGHTS, CAUSAL_WEIGHTS])


CAUSAL_CONTEXT = [
    [-0.4519, 0.2216],
    [-0.5874, 0.0058],
    [-0.6300, -0.0632],
    [-0.5675, -0.0843],
    [-0.5526, -0.0981],
    [-0.5299, -0.1081],
]


def test_3_5_3_causal_attention(batch):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    assert_book(ca(batch), batched(CAUSAL_CONTEXT))


def test_3_5_3_causal_attention_shorter_input(batch):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 10, 0.0)
    assert_book(ca(batch[:, :4]), batched(CAUSAL_CONTEXT[:4]))  # causal: the prefix is unchanged


def test_3_5_3_causal_attention_attributes():
    ca = CausalAttention(3, 2, 6, 0.5)
    assert isinstance(ca.dropout, torch.nn.Dropout)
    assert "mask" in dict(ca.named_buffers())
    torch.testing.assert_close(ca.mask, torch.triu(torch.ones(6, 6), diagonal=1))


# ---------------------------------------------------------------- 3.6


def test_3_6_1_wrapper(batch):
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    assert isinstance(mha.heads, torch.nn.ModuleList) and len(mha.heads) == 2
    assert_book(
        mha(batch),
        batched(
            [
                [-0.4519, 0.2216, 0.4772, 0.1063],
                [-0.5874, 0.0058, 0.5891, 0.3257],
                [-0.6300, -0.0632, 0.6202, 0.3860],
                [-0.5675, -0.0843, 0.5478, 0.3589],
                [-0.5526, -0.0981, 0.5321, 0.3428],
                [-0.5299, -0.1081, 0.5077, 0.3493],
            ]
        ),
    )


def test_3_6_2_multi_head_attention(batch):
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    assert (mha.d_out, mha.num_heads, mha.head_dim) == (2, 2, 1)
    assert_book(
        mha(batch),
        batched(
            [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
        ),
    )


def test_3_6_2_rejects_indivisible_heads():
    with pytest.raises(ValueError):
        MultiHeadAttention(3, 3, 6, 0.0, num_heads=2)


def test_3_6_2_matches_wrapper_without_out_proj():
    """With out_proj set to the identity, MHA equals stacked heads of the same weights."""
    torch.manual_seed(0)
    x = torch.rand(3, 5, 4)
    mha = MultiHeadAttention(4, 6, 8, 0.0, num_heads=3)
    wrapper = MultiHeadAttentionWrapper(4, 2, 8, 0.0, num_heads=3)
    with torch.no_grad():
        mha.out_proj.weight.copy_(torch.eye(6))
        mha.out_proj.bias.zero_()
        for h, head in enumerate(wrapper.heads):
            rows = slice(2 * h, 2 * h + 2)
            head.W_query.weight.copy_(mha.W_query.weight[rows])
            head.W_key.weight.copy_(mha.W_key.weight[rows])
            head.W_value.weight.copy_(mha.W_value.weight[rows])
        torch.testing.assert_close(mha(x), wrapper(x))


# ---------------------------------------------------------------- exercises


def test_exercise_3_1_transfer_weights(inputs):
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    torch.manual_seed(123)
    sa_v2 = SelfAttention_v2(3, 2)
    assert transfer_weights(sa_v2, sa_v1) is None
    expected = [
        [-0.5337, -0.1051],
        [-0.5323, -0.1080],
        [-0.5323, -0.1079],
        [-0.5297, -0.1076],
        [-0.5311, -0.1066],
        [-0.5299, -0.1081],
    ]
    assert_book(sa_v2(inputs), expected)
    assert_book(sa_v1(inputs), expected)
    torch.testing.assert_close(sa_v1(inputs), sa_v2(inputs))


def test_exercise_3_2_two_dim_wrapper(batch):
    # The exercise-solutions notebook prints an older, wrong value (-9.1476e-02 first);
    # the chapter's final CausalAttention gives these.
    torch.manual_seed(123)
    mha = build_two_dim_wrapper(3, 6, 0.0)
    assert isinstance(mha, MultiHeadAttentionWrapper) and len(mha.heads) == 2
    assert_book(
        mha(batch),
        batched(
            [
                [-0.5740, 0.2216],
                [-0.7320, 0.0155],
                [-0.7774, -0.0546],
                [-0.6979, -0.0817],
                [-0.6538, -0.0957],
                [-0.6424, -0.1065],
            ]
        ),
    )


def test_exercise_3_3_gpt2_small_attention():
    mha = build_gpt2_small_attention()
    assert isinstance(mha, MultiHeadAttention)
    assert sum(p.numel() for p in mha.parameters() if p.requires_grad) == 2_360_064
    assert (mha.d_out, mha.num_heads, mha.head_dim) == (768, 12, 64)
    assert mha.mask.shape == (1024, 1024)
    assert mha.W_query.bias is None
    with torch.no_grad():
        out = mha(torch.rand(2, 5, 768))
    assert out.shape == (2, 5, 768)
