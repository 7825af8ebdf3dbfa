"""Section 3.6: extending single-head attention to multi-head attention.

Book sections 3.6.1 (stacking heads) and 3.6.2 (weight splits).

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import torch
import torch.nn as nn

from sec3_5_causal_attention import CausalAttention  # noqa: F401  (your class from 3.5)


class MultiHeadAttentionWrapper(nn.Module):
    """Multi-head attention by stacking several CausalAttention heads.

    Book section 3.6.1.

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` must
    create:
        - ``self.heads``: an ``nn.ModuleList`` of ``num_heads`` ``CausalAttention(d_in,
          d_out, context_length, dropout, qkv_bias)`` modules

    ``forward(x)`` maps x of shape (b, T, d_in) to (b, T, num_heads * d_out): run every
    head and concatenate the results.

    Hint: a plain Python list would hide the heads' parameters from the module. Along
    which dimension do the heads' outputs go side by side?
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttentionWrapper.__init__: create self.heads as an nn.ModuleList")

    def forward(self, x):
        """(b, T, d_in) -> (b, T, num_heads * d_out)."""
        raise NotImplementedError("MultiHeadAttentionWrapper.forward: concatenate the heads' outputs")


class MultiHeadAttention(nn.Module):
    """Efficient multi-head attention: one projection per Q/K/V, split into heads.

    Book section 3.6.2.

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` must
    raise ``ValueError`` if ``d_out`` is not divisible by ``num_heads``, then create, in
    this order:
        - ``self.d_out``, ``self.num_heads``, ``self.head_dim = d_out // num_heads``
        - ``self.W_query``, ``self.W_key``, ``self.W_value``: ``nn.Linear(d_in, d_out)``,
          with a bias only if ``qkv_bias``
        - ``self.out_proj``: ``nn.Linear(d_out, d_out)``
        - ``self.dropout``: ``nn.Dropout(dropout)``
        - a buffer ``mask`` of shape (context_length, context_length), ones strictly above
          the diagonal

    ``forward(x)`` maps x of shape (b, T, d_in) to (b, T, d_out):
        1. project to queries, keys, values: (b, T, d_out)
        2. split into heads: (b, T, num_heads, head_dim), then (b, num_heads, T, head_dim)
        3. masked, scaled attention per head: weights (b, num_heads, T, T)
        4. dropout on the weights, weight the values: (b, num_heads, T, head_dim)
        5. merge heads back to (b, T, d_out) and apply ``out_proj``

    Hint: ``view`` only splits the last dimension correctly while it is still last, so
    view first and transpose afterwards; merging needs the inverse (transpose, then
    ``.contiguous().view``).
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttention.__init__: check d_out % num_heads, create the layers and the mask")

    def forward(self, x):
        """(b, T, d_in) -> (b, T, d_out)."""
        raise NotImplementedError("MultiHeadAttention.forward: split heads, masked attention, merge heads, out_proj")
