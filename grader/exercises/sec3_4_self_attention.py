"""Section 3.4: self-attention with trainable weights (scaled dot-product attention).

Book sections 3.4.1 and 3.4.2. Inputs are (T, d_in) tensors: no batch dimension yet.

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    """Project the inputs to queries, keys and values.

    Book section 3.4.1.

    Args:
        x: (T, d_in) tensor of token embeddings (a single (d_in,) token works too).
        W_query, W_key, W_value: (d_in, d_out) weight matrices.

    Returns:
        tuple ``(queries, keys, values)``, each of shape (T, d_out).

    Hint: each projection is a matrix multiplication of the inputs with one weight matrix.
    """
    raise NotImplementedError("project_qkv: multiply the inputs by W_query, W_key and W_value")


def scaled_attention_weights(queries, keys):
    """Scaled dot-product attention weights.

    Book section 3.4.1. Scores are the dot products of queries and keys; the weights are
    the softmax of the scores divided by the square root of the key dimension d_k.

    Args:
        queries: (T, d_k) tensor (or a single (d_k,) query).
        keys: (T, d_k) tensor.

    Returns:
        (T, T) tensor (or (T,) for a single query); rows sum to 1.

    Hint: d_k is the size of the keys' last dimension. Scale before the softmax.
    """
    raise NotImplementedError("scaled_attention_weights: softmax(q @ k^T / sqrt(d_k))")


class SelfAttention_v1(nn.Module):
    """A compact self-attention class with explicit weight matrices.

    Book section 3.4.2.

    ``__init__(d_in, d_out)`` must create, in this order (the order fixes the random
    numbers each one gets after ``torch.manual_seed``):
        - ``self.W_query``: ``nn.Parameter(torch.rand(d_in, d_out))``
        - ``self.W_key``:   same shape and initialisation
        - ``self.W_value``: same shape and initialisation

    ``forward(x)`` maps x of shape (T, d_in) to context vectors of shape (T, d_out):
    project to queries/keys/values, compute scaled attention weights, and weight the values.

    Hint: with ``torch.manual_seed(123)`` and the book's inputs, the first output row is
    about [0.2996, 0.8053].
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("SelfAttention_v1.__init__: create W_query, W_key, W_value as nn.Parameter")

    def forward(self, x):
        """(T, d_in) -> (T, d_out) context vectors."""
        raise NotImplementedError("SelfAttention_v1.forward: scaled dot-product attention")


class SelfAttention_v2(nn.Module):
    """Self-attention using nn.Linear layers for the projections.

    Book section 3.4.2.

    ``__init__(d_in, d_out, qkv_bias=False)`` must create, in this order:
        - ``self.W_query``: ``nn.Linear(d_in, d_out)``, with a bias only if ``qkv_bias``
        - ``self.W_key``:   same
        - ``self.W_value``: same

    ``forward(x)`` maps x of shape (T, d_in) to (T, d_out), exactly like SelfAttention_v1
    but calling the linear layers instead of multiplying by matrices.

    Hint: with ``torch.manual_seed(789)`` and the book's inputs, the first output row is
    about [-0.0739, 0.0713].
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("SelfAttention_v2.__init__: create W_query, W_key, W_value as nn.Linear")

    def forward(self, x):
        """(T, d_in) -> (T, d_out) context vectors."""
        raise NotImplementedError("SelfAttention_v2.forward: scaled dot-product attention")
