"""3.5 with functional dropout that ignores the module's mode."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens).tril()


def mask_and_renormalize(attn_weights):
    kept = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return kept / kept.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    t = attn_scores.shape[-1]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    return torch.softmax(attn_scores.masked_fill(future, float("-inf")) / math.sqrt(d_k), dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (q @ k.transpose(1, 2)).masked_fill(self.mask[:t, :t], -torch.inf)
        weights = F.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1), p=self.p, training=True)  # <- the mistake
        return weights @ v
