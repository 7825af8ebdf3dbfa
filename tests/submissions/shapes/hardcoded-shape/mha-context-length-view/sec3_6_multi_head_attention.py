"""3.6 whose keys are viewed with context_length tokens, not the number of tokens of the input."""
import torch
import torch.nn as nn

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """3.6.1: stack several CausalAttention heads and concatenate their outputs."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        # num_heads x (b, T, d_out) -> (b, T, num_heads * d_out)
        return torch.cat([head(x) for head in self.heads], dim=-1)  # [checkpoint: concat]


class MultiHeadAttention(nn.Module):
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
        self.context_length = context_length

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # combines the head outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape  # (b, T, d_in)

        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        # split the last dim: (b, T, d_out) -> (b, T, num_heads, head_dim)
        keys = keys.view(b, self.context_length, self.num_heads, self.head_dim)  # <- the mistake
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # (b, T, num_heads, head_dim) -> (b, num_heads, T, head_dim)
        keys = keys.transpose(1, 2)  # [checkpoint: split_keys]
        queries = queries.transpose(1, 2)  # [checkpoint: split_queries]
        values = values.transpose(1, 2)  # [checkpoint: split_values]

        # one attention matrix per head: (b, num_heads, T, T)
        attn_scores = queries @ keys.transpose(2, 3)  # [checkpoint: scores]
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # (T, T)
        attn_scores.masked_fill_(mask_bool, -torch.inf)  # [checkpoint: masked]

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)  # (b, num_heads, T, T)
        attn_weights = self.dropout(attn_weights)  # [checkpoint: dropped]

        # (b, num_heads, T, head_dim) -> (b, T, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)  # [checkpoint: matmul=context]

        # merge the heads: (b, T, num_heads, head_dim) -> (b, T, d_out)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # [checkpoint: merged]
        context_vec = self.out_proj(context_vec)  # (b, T, d_out)
        return context_vec
