"""Correct 3.5: CausalAttention masks AFTER the softmax and renormalises the rows (the book's first
approach), with a non-persistent boolean buffer and permute instead of transpose."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    mask = torch.zeros(num_tokens, num_tokens)
    for i in range(num_tokens):
        mask[i, : i + 1] = 1.0
    return mask


def mask_and_renormalize(attn_weights):
    masked = attn_weights.masked_fill(simple_causal_mask(attn_weights.shape[-1]) == 0, 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    T = attn_scores.shape[-1]
    scores = attn_scores + torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        n = x.size(1)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.matmul(queries, keys.permute(0, 2, 1)) / keys.size(-1) ** 0.5
        weights = torch.softmax(scores, dim=-1)
        weights = weights * self.mask[:n, :n]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = self.dropout(weights)
        return torch.matmul(weights, values)
