"""Correct 3.5: CausalAttention with F.scaled_dot_product_attention(is_causal=True, dropout_p=...).

The mask buffer is registered as the exercise asks, but SDPA builds its own causal mask.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens).tril()


def mask_and_renormalize(attn_weights):
    masked = attn_weights.tril()
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    T = attn_scores.size(-1)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    return (attn_scores.masked_fill(future, float("-inf")) / d_k ** 0.5).softmax(-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
