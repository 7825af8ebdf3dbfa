"""Correct 3.5: SDPA with a boolean attn_mask cut from a (1, 1, ctx, ctx) buffer; finfo.min masking."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(num_tokens):
    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool)).to(torch.float32)


def mask_and_renormalize(attn_weights):
    keep = simple_causal_mask(attn_weights.shape[-1]).bool()
    masked = torch.where(keep, attn_weights, torch.zeros_like(attn_weights))
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    keep = simple_causal_mask(attn_scores.shape[-1]).bool()
    scaled = attn_scores / d_k ** 0.5
    return torch.softmax(scaled.masked_fill(~keep, torch.finfo(scaled.dtype).min), dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        allowed = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))
        self.register_buffer("mask", allowed.view(1, 1, context_length, context_length))

    def forward(self, x):
        b, T, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=self.mask[0, 0, :T, :T],
            dropout_p=self.dropout.p if self.training else 0.0)
