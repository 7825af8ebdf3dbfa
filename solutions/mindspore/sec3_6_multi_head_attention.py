"""Section 3.6: extending single-head attention to multi-head attention (MindSpore)."""
from mindspore import nn, ops

from .sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Cell):
    """3.6.1: stack several CausalAttention heads and concatenate their outputs."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.CellList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def construct(self, x):
        # num_heads x (b, T, d_out) -> (b, T, num_heads * d_out)
        return ops.cat([head(x) for head in self.heads], axis=-1)


class MultiHeadAttention(nn.Cell):
    """3.6.2: multi-head attention with weight splits: one projection, split into heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(
                f"d_out ({d_out}) must be divisible by num_heads ({num_heads})"
            )

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.out_proj = nn.Dense(d_out, d_out)  # combines the head outputs
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer(
            "mask", ops.triu(ops.ones((context_length, context_length)), diagonal=1)
        )

    def construct(self, x):
        b, num_tokens, d_in = x.shape  # (b, T, d_in)

        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        # split the last axis: (b, T, d_out) -> (b, T, num_heads, head_dim)
        keys = keys.reshape(b, num_tokens, self.num_heads, self.head_dim)
        values = values.reshape(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.reshape(b, num_tokens, self.num_heads, self.head_dim)

        # (b, T, num_heads, head_dim) -> (b, num_heads, T, head_dim)
        keys = keys.swapaxes(1, 2)
        queries = queries.swapaxes(1, 2)
        values = values.swapaxes(1, 2)

        # one attention matrix per head: (b, num_heads, T, T)
        attn_scores = queries @ keys.swapaxes(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # (T, T)
        attn_scores = attn_scores.masked_fill(mask_bool, float("-inf"))

        attn_weights = ops.softmax(attn_scores / keys.shape[-1]**0.5, axis=-1)  # (b, num_heads, T, T)
        attn_weights = self.dropout(attn_weights)

        # (b, num_heads, T, head_dim) -> (b, T, num_heads, head_dim)
        context_vec = (attn_weights @ values).swapaxes(1, 2)

        # merge the heads: (b, T, num_heads, head_dim) -> (b, T, d_out)
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # (b, T, d_out)
        return context_vec
