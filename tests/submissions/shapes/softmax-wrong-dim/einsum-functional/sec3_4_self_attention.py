"""3.4 written with einsum and torch.nn.functional; the softmax normalises the wrong axis."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def project_qkv(x, W_query, W_key, W_value):
    return torch.einsum("ti,io->to", x, W_query), torch.einsum("ti,io->to", x, W_key), torch.einsum("ti,io->to", x, W_value)


def _weights(queries, keys):
    scores = torch.einsum("qd,kd->qk", queries, keys) / math.sqrt(keys.shape[-1])
    return F.softmax(scores, dim=0)  # <- the mistake


def scaled_attention_weights(queries, keys):
    return _weights(queries, keys)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return torch.einsum("qk,kd->qd", _weights(q, k), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return _weights(q, k) @ v
