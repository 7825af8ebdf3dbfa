"""3.5 with a loop over the sequences of the batch, and the square root of the scores taken where
they should be divided by the square root of d_k."""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    return torch.tril(torch.ones(num_tokens, num_tokens))


def mask_and_renormalize(attn_weights):
    masked = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    return masked / masked.sum(dim=-1, keepdim=True)


def masked_attention_weights(attn_scores, d_k):
    t = attn_scores.shape[-1]
    masked = attn_scores.masked_fill(torch.triu(torch.ones(t, t), diagonal=1).bool(), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        outputs = []
        for sequence in x:  # one sequence of the batch at a time
            t = sequence.shape[0]
            q, k, v = self.W_query(sequence), self.W_key(sequence), self.W_value(sequence)
            scores = (q @ k.T).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
            weights = torch.softmax(scores.sqrt(), dim=-1)  # <- the mistake
            outputs.append(self.dropout(weights) @ v)
        return torch.stack(outputs)
