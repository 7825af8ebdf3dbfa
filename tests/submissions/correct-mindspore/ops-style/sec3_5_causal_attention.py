"""A correct 3.5: the mask as a non-trainable Parameter of booleans, ops.where, functional dropout
that reads self.training, ops.transpose with a permutation."""
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


def simple_causal_mask(num_tokens):
    return ops.ones((num_tokens, num_tokens), ms.float32).tril()


def mask_and_renormalize(attn_weights):
    t = attn_weights.shape[-1]
    keep = ops.tril(ops.ones((t, t), ms.bool_))
    masked = ops.where(keep, attn_weights, ops.zeros_like(attn_weights))
    return masked / masked.sum(axis=-1, keepdims=True)


def masked_attention_weights(attn_scores, d_k):
    t = attn_scores.shape[-1]
    keep = ops.tril(ops.ones((t, t), ms.bool_))
    masked = ops.where(keep, attn_scores, ops.full_like(attn_scores, float("-inf")))
    return ops.softmax(masked / math.sqrt(d_k), axis=-1)


class CausalAttention(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.mask = Parameter(ops.triu(ops.ones((context_length, context_length), ms.bool_), diagonal=1),
                              name="mask", requires_grad=False)

    def construct(self, x):
        b, t, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = ops.bmm(q, ops.transpose(k, (0, 2, 1)))
        scores = ops.masked_fill(scores, self.mask[:t, :t], float("-inf"))
        weights = self.dropout(ops.softmax(scores / math.sqrt(k.shape[-1]), axis=-1))
        return ops.bmm(weights, v)
