"""A correct 3.6: heads in an nn.SequentialCell, ops.concat, functional dropout on self.training."""
import math

import mindspore as ms
from mindspore import nn, ops

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.CellList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def construct(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        return ops.concat(outputs, axis=2)


class MultiHeadAttention(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.out_proj = nn.Dense(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)
        self.p = dropout
        self.register_buffer("mask", ops.ones((context_length, context_length)).triu(1).bool())

    def _split(self, t, b, n):
        return ops.transpose(t.view(b, n, self.num_heads, self.head_dim), (0, 2, 1, 3))

    def construct(self, x):
        b, n, _ = x.shape
        q, k, v = (self._split(f(x), b, n) for f in (self.W_query, self.W_key, self.W_value))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.mask[:n, :n], float("-inf"))
        weights = self.dropout(ops.softmax(scores, axis=-1))
        context = ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3)).reshape(b, n, self.d_out)
        return self.out_proj(context)
