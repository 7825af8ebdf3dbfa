"""3.6 - multi-head attention (MindSpore)."""
import mindspore
from mindspore import Parameter, nn, ops

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.CellList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                  for _ in range(num_heads)])

    def construct(self, x):
        return ops.cat([head(x) for head in self.heads], axis=-1)


class MultiHeadAttention(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.out_proj = nn.Dense(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)
        # the mask as a Parameter, but trainable: the optimizer would update it
        self.mask = Parameter(ops.triu(ops.ones((context_length, context_length)), diagonal=1))

    def construct(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).reshape(b, t, self.num_heads, self.head_dim).swapaxes(1, 2)
        k = self.W_key(x).reshape(b, t, self.num_heads, self.head_dim).swapaxes(1, 2)
        v = self.W_value(x).reshape(b, t, self.num_heads, self.head_dim).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(2, 3))
        scores = scores.masked_fill(self.mask.bool()[:t, :t], float("-inf"))
        weights = self.dropout(ops.softmax(scores / self.head_dim ** 0.5, axis=-1))
        context = ops.matmul(weights, v).swapaxes(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(context)
