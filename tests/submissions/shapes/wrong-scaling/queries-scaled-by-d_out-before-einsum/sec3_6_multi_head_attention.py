"""3.6 the queries scaled before einsum, by 1/sqrt(d_out) instead of 1/sqrt(head_dim)."""
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
        outs = []
        for head in self.heads:
            outs.append(head(x))
        return torch.cat(outs, dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).reshape(b, t, self.num_heads, self.head_dim)
        k = self.W_key(x).reshape(b, t, self.num_heads, self.head_dim)
        v = self.W_value(x).reshape(b, t, self.num_heads, self.head_dim)
        q = q * (1.0 / math.sqrt(self.d_out))  # <- the mistake
        s = torch.einsum("bqhd,bkhd->bhqk", q, k)
        s = s.masked_fill(~self.mask[:t, :t], -1e9)
        w = F.softmax(s, dim=-1)
        w = self.dropout(w)
        ctx = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, t, self.d_out)
        return self.out_proj(ctx)
