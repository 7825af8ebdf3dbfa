"""A correct 3.6 written differently: einsum, a boolean tril buffer, scaling before masking,
finfo.min as the fill value, heads appended to a ModuleList in a loop."""
import torch
from torch import nn

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        return torch.cat(tuple(head(x) for head in self.heads), dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"{d_out=} is not divisible by {num_heads=}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x):
        T = x.shape[1]
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim))  # (b, T, h, d)
        k = self.W_key(x).unflatten(-1, (self.num_heads, self.head_dim))
        v = self.W_value(x).unflatten(-1, (self.num_heads, self.head_dim))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.head_dim ** -0.5
        scores = scores.masked_fill(~self.mask[:T, :T], torch.finfo(scores.dtype).min)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.einsum("bhqk,bkhd->bqhd", weights, v).flatten(-2)
        return self.out_proj(context)
