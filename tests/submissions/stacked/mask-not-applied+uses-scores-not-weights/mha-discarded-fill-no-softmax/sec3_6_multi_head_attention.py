"""3.6 with two mistakes on one path: masked_fill's result thrown away (the mask is never applied),
heads split by a method of its own, and no softmax (the scaled scores weight the values)."""
import torch
import torch.nn as nn

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, t, _ = x.shape
        queries, keys, values = self.split(self.W_query(x)), self.split(self.W_key(x)), self.split(self.W_value(x))
        scores = queries @ keys.transpose(2, 3)
        scores.masked_fill(self.mask.bool()[:t, :t], float("-inf"))  # <- the mistake
        weights = self.dropout(scores / self.head_dim**0.5)  # <- the mistake
        context = (weights @ values).transpose(1, 2).contiguous().view(b, t, self.d_out)  # <- the mistake: no softmax before
        return self.out_proj(context)
