"""3.6 with einsum and a mask made as a local tensor: torch.where's result is never used (no mask),
and the scores are not scaled."""
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
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        h, d = self.num_heads, self.head_dim
        q = self.W_query(x).view(b, t, h, d)
        k = self.W_key(x).view(b, t, h, d)
        v = self.W_value(x).view(b, t, h, d)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k)
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        torch.where(future, torch.full_like(scores, -torch.inf), scores)  # <- the mistake
        weights = self.dropout(torch.softmax(scores, dim=-1))  # <- the mistake
        context = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, t, self.d_out)
        return self.out_proj(context)
