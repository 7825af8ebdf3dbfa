"""Section 3.3: a simple self-attention mechanism without trainable weights.

``inputs`` is a (T, d) tensor: T token embeddings of size d.
"""
import torch


def attention_scores_for_query(inputs, query_index):
    """3.3.1: dot product of every input with the query inputs[query_index]."""
    query = inputs[query_index]  # (d,)
    return inputs @ query  # (T, d) @ (d,) -> (T,)


def softmax_naive(x):
    """3.3.1: exp(x) / sum(exp(x)) along the last dimension (no overflow protection)."""
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def context_vector_for_query(inputs, query_index):
    """3.3.1: the attention-weighted sum of all inputs for one query."""
    attn_scores = attention_scores_for_query(inputs, query_index)  # (T,)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # (T,), sums to 1
    return attn_weights @ inputs  # (T,) @ (T, d) -> (d,)


def attention_scores(inputs):
    """3.3.2: all pairwise dot products."""
    return inputs @ inputs.T  # (T, d) @ (d, T) -> (T, T)


def attention_weights(inputs):
    """3.3.2: attention scores normalised row by row with softmax."""
    return torch.softmax(attention_scores(inputs), dim=-1)  # (T, T), rows sum to 1


def context_vectors(inputs):
    """3.3.2: one context vector per input."""
    return attention_weights(inputs) @ inputs  # (T, T) @ (T, d) -> (T, d)
