"""A correct 3.6 written differently: x @ W.T with the nn.Linear weights, masking after the
softmax with renormalisation, the scale taken from head_dim, the heads as a batch dimension."""
import math

import torch
import torch.nn as nn

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias)
                                    for _ in range(num_heads)])
        self.d_out = d_out

    def forward(self, x):
        return torch.stack([head(x) for head in self.heads], dim=2).flatten(start_dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    @staticmethod
    def _project(x, layer):
        y = x @ layer.weight.T
        return y if layer.bias is None else y + layer.bias

    def forward(self, x):
        b, t, _ = x.shape
        h, d = self.num_heads, self.head_dim
        # (b, T, d_out) -> (b*h, T, d)
        q, k, v = (self._project(x, layer).view(b, t, h, d).transpose(1, 2).reshape(b * h, t, d)
                   for layer in (self.W_query, self.W_key, self.W_value))
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d), dim=-1)
        keep = 1.0 - self.mask[:t, :t]
        weights = weights * keep
        weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = self.dropout(weights.view(b, h, t, t))
        context = (weights @ v.view(b, h, t, d)).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(context)
