"""3.4: SelfAttention_v2's layers always get a bias."""
import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def scaled_attention_weights(queries, keys):
    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project_qkv(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(q, k) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out) for _ in range(3))  # <- the mistake

    def forward(self, x):
        return scaled_attention_weights(self.W_query(x), self.W_key(x)) @ self.W_value(x)
