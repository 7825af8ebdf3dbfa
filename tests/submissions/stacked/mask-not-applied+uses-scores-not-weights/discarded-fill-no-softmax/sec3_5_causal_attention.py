"""3.5 with two mistakes on one path: masked_fill's result thrown away (the mask is never applied),
and no softmax (the context is built from the scaled scores)."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    return torch.tril(torch.ones(num_tokens, num_tokens))


def mask_and_renormalize(attn_weights):
    masked = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    t = attn_scores.shape[-1]
    masked = attn_scores.masked_fill(torch.triu(torch.ones(t, t), diagonal=1).bool(), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


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
        b, num_tokens, _ = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # <- the mistake
        attn_weights = attn_scores / keys.shape[-1] ** 0.5  # <- the mistake
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
