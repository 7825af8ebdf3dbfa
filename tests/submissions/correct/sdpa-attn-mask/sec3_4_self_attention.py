"""Correct 3.4: SelfAttention_v2 as x @ W.T with raw nn.Linear parameters via F.linear; bmm-free matmuls."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def project_qkv(x, W_query, W_key, W_value):
    W = torch.cat([W_query, W_key, W_value], dim=1)  # (d_in, 3 * d_out)
    return tuple((x @ W).chunk(3, dim=-1))


def scaled_attention_weights(queries, keys):
    scores = torch.mm(queries, keys.t())
    return torch.softmax(scores / torch.tensor(keys.shape[-1], dtype=scores.dtype).sqrt(), dim=-1)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        weights = scaled_attention_weights(x @ self.W_query, x @ self.W_key)
        return weights @ (x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = F.linear(x, self.W_query.weight, self.W_query.bias)
        k = F.linear(x, self.W_key.weight, self.W_key.bias)
        v = F.linear(x, self.W_value.weight, self.W_value.bias)
        return scaled_attention_weights(q, k) @ v
