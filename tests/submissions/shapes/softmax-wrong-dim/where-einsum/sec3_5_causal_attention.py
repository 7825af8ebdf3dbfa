"""3.5 with einsum and torch.where; the softmax runs down the columns."""
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
        self.register_buffer("allowed", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))
        self.register_buffer("mask", ~self.allowed)

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(k.shape[-1])
        scores = torch.where(self.allowed[:t, :t], scores, torch.tensor(float("-inf")))
        weights = scores.softmax(dim=1)  # <- the mistake
        return torch.einsum("bqk,bkd->bqd", self.dropout(weights), v)
