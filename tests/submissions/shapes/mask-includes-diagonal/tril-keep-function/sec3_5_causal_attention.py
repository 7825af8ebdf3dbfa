"""3.5: masked_attention_weights keeps only what is strictly before each token."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    return torch.tril(torch.ones(num_tokens, num_tokens))


def mask_and_renormalize(attn_weights):
    masked = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    t = attn_scores.shape[-1]
    keep = torch.tril(torch.ones(t, t), diagonal=-1).bool()  # <- the mistake
    scores = torch.where(keep, attn_scores, torch.full_like(attn_scores, -torch.inf))
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (q @ k.transpose(1, 2)).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        return self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)) @ v
