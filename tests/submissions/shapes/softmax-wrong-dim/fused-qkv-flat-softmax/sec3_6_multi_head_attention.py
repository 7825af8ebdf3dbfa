"""3.6 with the three projections fused into one matrix product, and a softmax over every entry
of each head's matrix of scores instead of each row."""
import torch
import torch.nn as nn
import torch.nn.functional as F

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
        weight = torch.cat([self.W_query.weight, self.W_key.weight, self.W_value.weight])
        bias = None
        if self.W_query.bias is not None:
            bias = torch.cat([self.W_query.bias, self.W_key.bias, self.W_value.bias])
        qkv = F.linear(x, weight, bias).view(b, t, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (b, heads, T, head_dim)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        scaled = scores / self.head_dim**0.5
        weights = torch.softmax(scaled.flatten(-2), dim=-1).view(b, self.num_heads, t, t)  # <- the mistake
        context = (self.dropout(weights) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(context)
