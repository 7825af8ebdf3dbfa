"""3.6 reshaping the projections straight to (b, heads, T, head_dim)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).reshape(b, self.num_heads, t, self.head_dim)  # <- the mistake
        k = self.W_key(x).reshape(b, self.num_heads, t, self.head_dim)  # <- the mistake
        v = self.W_value(x).reshape(b, self.num_heads, t, self.head_dim)  # <- the mistake
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k).masked_fill(self.mask[:t, :t], -torch.inf)
        weights = self.dropout(torch.softmax(scores * self.head_dim ** -0.5, dim=-1))
        return self.out_proj(torch.einsum("bhqk,bhkd->bqhd", weights, v).reshape(b, t, self.d_out))
