"""Correct 3.4 written with torch.einsum, and SelfAttention_v2 computing x @ W.T (+ b) from the layers' raw parameters."""
import math

import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    return (torch.einsum("ti,io->to", x, W_query), torch.einsum("ti,io->to", x, W_key),
            torch.einsum("ti,io->to", x, W_value))


def scaled_attention_weights(queries, keys):
    scores = torch.einsum("qd,kd->qk", queries, keys) / math.sqrt(keys.size(-1))
    return scores.softmax(dim=1)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return torch.einsum("qk,kd->qd", scaled_attention_weights(q, k), v)


def _linear(layer, x):
    out = x @ layer.weight.T
    return out if layer.bias is None else out + layer.bias


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = _linear(self.W_query, x), _linear(self.W_key, x), _linear(self.W_value, x)
        return torch.einsum("qk,kd->qd", scaled_attention_weights(q, k), v)
