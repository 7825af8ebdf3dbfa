"""3.6 whose wrapper keeps its heads as attributes of their own, runs them in a loop and mixes
their outputs with a layer the book's wrapper does not have."""
import torch
import torch.nn as nn

from sec3_5_causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.mix = nn.Linear(d_out * num_heads, d_out * num_heads, bias=False)  # <- the mistake

    def forward(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        joined = torch.cat(outputs, dim=-1)
        return self.mix(joined)  # <- the mistake


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
        q, k, v = (
            layer(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
            for layer in (self.W_query, self.W_key, self.W_value)
        )
        scores = (q @ k.transpose(2, 3)).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        weights = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(b, t, self.d_out))
