"""Correct 3.4 with explicit exp/sum softmax (stabilised) and permute instead of .T."""
import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    queries = x @ W_query
    keys = x @ W_key
    values = x @ W_value
    return queries, keys, values


def _softmax_rows(scores):
    e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def scaled_attention_weights(queries, keys):
    return _softmax_rows(queries @ keys.permute(1, 0) / keys.shape[-1] ** 0.5)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(queries, keys) @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return scaled_attention_weights(self.W_query(x), self.W_key(x)) @ self.W_value(x)
