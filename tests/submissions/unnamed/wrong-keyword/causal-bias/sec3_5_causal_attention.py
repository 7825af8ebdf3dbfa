"""3.5 whose CausalAttention takes its bias setting as bias=, not as the exercise's qkv_bias=."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    """3.5.1: ones on and below the diagonal, zeros above it."""
    return torch.tril(torch.ones(num_tokens, num_tokens))  # (T, T)


def mask_and_renormalize(attn_weights):
    """3.5.1: zero the weights above the diagonal, then rescale each row to sum to 1."""
    mask_simple = simple_causal_mask(attn_weights.shape[-1])  # (T, T)
    masked_simple = attn_weights * mask_simple  # (..., T, T)
    row_sums = masked_simple.sum(dim=-1, keepdim=True)  # (..., T, 1)
    return masked_simple / row_sums  # (..., T, T)


def masked_attention_weights(attn_scores, d_k):
    """3.5.1: -inf above the diagonal, then softmax(scores / sqrt(d_k)) over the last dim."""
    num_tokens = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)  # (T, T), 1 = future
    masked = attn_scores.masked_fill(mask.bool(), -torch.inf)  # (..., T, T)
    return torch.softmax(masked / d_k**0.5, dim=-1)  # (..., T, T)


class CausalAttention(nn.Module):
    """3.5.3: a compact causal self-attention class with dropout, for batched inputs."""

    def __init__(self, d_in, d_out, context_length, dropout, bias=False):  # <- the mistake
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=bias)
        self.W_key = nn.Linear(d_in, d_out, bias=bias)
        self.W_value = nn.Linear(d_in, d_out, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )  # (context_length, context_length), 1 above the diagonal

    def forward(self, x):
        b, num_tokens, d_in = x.shape  # (b, T, d_in)
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)

        attn_scores = queries @ keys.transpose(1, 2)  # (b, T, d_out) @ (b, d_out, T) -> (b, T, T)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # [checkpoint: masked]
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)  # (b, T, T)
        attn_weights = self.dropout(attn_weights)  # [checkpoint: dropped]

        context_vec = attn_weights @ values  # (b, T, T) @ (b, T, d_out) -> (b, T, d_out)
        return context_vec
