"""3.4 where the scores' square root replaces the division by the square root of d_k (** 0.5 and
torch.pow), in every function."""
import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    """3.4.1: project the inputs to queries, keys and values."""
    queries = x @ W_query  # (T, d_in) @ (d_in, d_out) -> (T, d_out)
    keys = x @ W_key  # (T, d_out)
    values = x @ W_value  # (T, d_out)
    return queries, keys, values


def scaled_attention_weights(queries, keys):
    """3.4.1: softmax(queries @ keys.T / sqrt(d_k)) over the last dimension."""
    d_k = keys.shape[-1]
    attn_scores = queries @ keys.T  # (T, d_k) @ (d_k, T) -> (T, T)
    return torch.softmax(attn_scores**0.5, dim=-1)  # <- the mistake


class SelfAttention_v1(nn.Module):
    """3.4.2: self-attention with explicit weight matrices."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key  # (T, d_in) -> (T, d_out)
        queries = x @ self.W_query  # (T, d_out)
        values = x @ self.W_value  # (T, d_out)

        attn_scores = queries @ keys.T  # (T, T)
        attn_weights = torch.softmax(torch.pow(attn_scores, 0.5), dim=-1)  # <- the mistake

        context_vec = attn_weights @ values  # (T, T) @ (T, d_out) -> (T, d_out)
        return context_vec


class SelfAttention_v2(nn.Module):
    """3.4.2: self-attention with nn.Linear projections."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)  # (T, d_in) -> (T, d_out)
        queries = self.W_query(x)  # (T, d_out)
        values = self.W_value(x)  # (T, d_out)

        attn_scores = queries @ keys.T  # (T, T)
        attn_weights = torch.softmax(torch.pow(attn_scores, 0.5), dim=-1)  # <- the mistake

        context_vec = attn_weights @ values  # (T, d_out)
        return context_vec
