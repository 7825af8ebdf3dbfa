"""3.5 - causal attention with dropout (MindSpore)."""
import mindspore
from mindspore import nn, ops


def simple_causal_mask(num_tokens):
    return ops.tril(ops.ones((num_tokens, num_tokens)))


def mask_and_renormalize(attn_weights):
    masked = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return masked / masked.sum(axis=-1, keepdims=True)


def masked_attention_weights(attn_scores, d_k):
    n = attn_scores.shape[-1]
    mask = ops.triu(ops.ones((n, n)), diagonal=1).bool()
    return ops.softmax(attn_scores.masked_fill(mask, float("-inf")) / d_k ** 0.5, axis=-1)


class CausalAttention(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)  # as in PyTorch... but MindSpore reads this as keep_prob
        self.register_buffer("mask", ops.triu(ops.ones((context_length, context_length)), diagonal=1))

    def construct(self, x):
        b, num_tokens, d_in = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        scores = ops.matmul(queries, keys.swapaxes(1, 2))
        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], float("-inf"))
        weights = self.dropout(ops.softmax(scores / keys.shape[-1] ** 0.5, axis=-1))
        return ops.matmul(weights, values)
