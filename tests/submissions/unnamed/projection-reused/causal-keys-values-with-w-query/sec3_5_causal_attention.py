"""3.5 whose keys and values are computed with W_query (W_key and W_value are created, never used)."""
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
        queries = self.W_query(x)
        keys = self.W_query(x)  # <- the mistake
        values = self.W_query(x)  # <- the mistake
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values
