"""A correct 3.4: named Parameters, ops.matmul, nn.Softmax as a child Cell, ops.sqrt scaling."""
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


def project_qkv(x, W_query, W_key, W_value):
    return ops.matmul(x, W_query), ops.matmul(x, W_key), ops.matmul(x, W_value)


def scaled_attention_weights(queries, keys):
    scores = ops.matmul(queries, keys.swapaxes(-2, -1)) if keys.ndim > 1 else ops.matmul(queries, keys)
    return ops.softmax(scores * (1.0 / math.sqrt(keys.shape[-1])), axis=-1)


class SelfAttention_v1(nn.Cell):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = Parameter(ops.rand(d_in, d_out), name="W_query")
        self.W_key = Parameter(ops.rand(d_in, d_out), name="W_key")
        self.W_value = Parameter(ops.rand(d_in, d_out), name="W_value")
        self.softmax = nn.Softmax(axis=-1)

    def construct(self, x):
        q, k, v = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return ops.matmul(self.softmax(ops.matmul(q, k.T) / math.sqrt(k.shape[-1])), v)


class SelfAttention_v2(nn.Cell):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)

    def construct(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return ops.matmul(scaled_attention_weights(q, k), v)
