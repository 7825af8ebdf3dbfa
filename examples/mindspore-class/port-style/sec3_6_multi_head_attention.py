"""3.6 in the style of the chapter's MindSpore port."""
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

from sec3_5_causal_attention import CausalAttention

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")


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
        self.mask = Parameter(ops.triu(ops.ones((context_length, context_length), ms.float32), diagonal=1),
                              name="mask", requires_grad=False)

    def construct(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim)
        keys, queries, values = keys.swapaxes(1, 2), queries.swapaxes(1, 2), values.swapaxes(1, 2)
        attn_scores = ops.matmul(queries, keys.swapaxes(2, 3))
        mask_bool = self.mask.astype(ms.bool_)[:num_tokens, :num_tokens]
        attn_scores = attn_scores.masked_fill(mask_bool, float("-inf"))
        attn_weights = ops.softmax(attn_scores / keys.shape[-1] ** 0.5, axis=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = ops.matmul(attn_weights, values).swapaxes(1, 2)
        context_vec = context_vec.view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
