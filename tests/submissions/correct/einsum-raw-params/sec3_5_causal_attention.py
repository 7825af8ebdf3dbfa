"""Correct 3.5 with einsum, a -1e9 fill instead of -inf and a boolean tril buffer (True = may attend)."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    rows = torch.arange(num_tokens).unsqueeze(1)
    cols = torch.arange(num_tokens).unsqueeze(0)
    return (cols <= rows).float()


def mask_and_renormalize(attn_weights):
    kept = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return kept / kept.sum(-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    allowed = simple_causal_mask(attn_scores.shape[-1]).bool()
    scores = torch.where(allowed, attn_scores, torch.full_like(attn_scores, -1e9))
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)).bool())

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k)
        scores = scores.masked_fill(~self.mask[:T, :T], -1e9)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return torch.einsum("bqk,bkd->bqd", self.dropout(weights), v)
