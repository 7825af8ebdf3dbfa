"""Section 3.5: hiding future words with causal attention.

Book sections 3.5.1 (causal mask), 3.5.2 (dropout) and 3.5.3 (the CausalAttention class).

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    """The simple causal mask: which positions a token may attend to.

    Book section 3.5.1.

    Args:
        num_tokens: int T.

    Returns:
        (T, T) float tensor with ones on and below the diagonal and zeros above it.

    Hint: PyTorch has a function for the lower triangle of a matrix.
    """
    raise NotImplementedError("simple_causal_mask: ones on and below the diagonal")


def mask_and_renormalize(attn_weights):
    """Mask attention weights that were already softmax-normalised.

    Book section 3.5.1 (the first, simple approach). Zero every weight above the diagonal,
    then divide each row by its new sum so that rows sum to 1 again.

    Args:
        attn_weights: (T, T) tensor (or (..., T, T)), rows summing to 1.

    Returns:
        tensor of the same shape: zeros above the diagonal, rows summing to 1.

    Hint: multiply by the simple mask; ``keepdim=True`` makes the row sums broadcast.
    """
    raise NotImplementedError("mask_and_renormalize: zero the future, then renormalise the rows")


def masked_attention_weights(attn_scores, d_k):
    """Causal attention weights computed from raw scores with the -inf trick.

    Book section 3.5.1 (the more efficient approach). Set the scores above the diagonal to
    minus infinity, then apply the scaled softmax: softmax(scores / sqrt(d_k)) over the
    last dimension. exp(-inf) = 0, so the future gets zero weight and rows still sum to 1.

    Args:
        attn_scores: (T, T) tensor (or (..., T, T)) of unnormalised scores.
        d_k: int, the key dimension used for scaling.

    Returns:
        tensor of the same shape as ``attn_scores``.

    Hint: build a mask of ones strictly above the diagonal and use ``masked_fill``.
    Keep the diagonal: a token may attend to itself.
    """
    raise NotImplementedError("masked_attention_weights: -inf above the diagonal, then scaled softmax")


class CausalAttention(nn.Module):
    """Causal self-attention with dropout, for batched inputs.

    Book section 3.5.3.

    ``__init__(d_in, d_out, context_length, dropout, qkv_bias=False)`` must create, in
    this order:
        - ``self.W_query``, ``self.W_key``, ``self.W_value``: ``nn.Linear(d_in, d_out)``,
          with a bias only if ``qkv_bias``
        - ``self.dropout``: ``nn.Dropout(dropout)``
        - a buffer ``mask`` (``self.register_buffer``) of shape
          (context_length, context_length) with ones strictly above the diagonal

    ``forward(x)`` maps x of shape (b, T, d_in) to (b, T, d_out), for any
    T <= context_length: project, compute scores, mask the future with -inf, scaled
    softmax, dropout on the attention weights, weight the values.

    Hint: with a batch dimension, transpose the keys' last two dimensions only; cut the
    mask to the current number of tokens.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("CausalAttention.__init__: create W_query, W_key, W_value, dropout and the mask buffer")

    def forward(self, x):
        """(b, T, d_in) -> (b, T, d_out) context vectors."""
        raise NotImplementedError("CausalAttention.forward: masked scaled dot-product attention with dropout")
