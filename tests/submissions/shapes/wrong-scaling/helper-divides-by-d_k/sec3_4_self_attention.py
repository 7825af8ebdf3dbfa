"""3.4 with one helper for the attention weights, used everywhere: it divides the scores by d_k
itself, not by its square root."""
import torch
import torch.nn as nn


def _attention(queries, keys):
    scores = queries @ keys.T
    return torch.softmax(scores / keys.shape[-1], dim=-1)  # <- the mistake


def project_qkv(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def scaled_attention_weights(queries, keys):
    return _attention(queries, keys)  # <- the mistake (the helper it calls: a helper's line is shown where it is called)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return _attention(queries, keys) @ values  # <- the mistake (the helper it calls)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _attention(self.W_query(x), self.W_key(x)) @ self.W_value(x)  # <- the mistake (the helper it calls)
