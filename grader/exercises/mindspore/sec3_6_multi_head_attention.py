"""Section 3.6: extending single-head attention to multi-head attention (MindSpore).

第 3.6 节：将单头注意力扩展为多头注意力。

Book sections 3.6.1 (stacking heads) and 3.6.2 (weight splits).

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import mindspore  # noqa: F401
from mindspore import nn, ops  # noqa: F401

from sec3_5_causal_attention import CausalAttention  # noqa: F401  (your class from 3.5)


class MultiHeadAttentionWrapper(nn.Cell):
    """Multi-head attention (多头注意力) by stacking several CausalAttention heads.

    Book section 3.6.1.

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` must
    create:
        - ``self.heads``: an ``nn.CellList`` of ``num_heads`` ``CausalAttention(d_in,
          d_out, context_length, dropout, qkv_bias)`` Cells

    ``construct(x)`` maps x of shape (b, T, d_in) to (b, T, num_heads * d_out): run every
    head and concatenate the results.

    Hint: a plain Python list would hide the heads' parameters from the Cell
    (``trainable_params()`` would not see them). Along which axis do the heads' outputs go
    side by side (``ops.cat(..., axis=...)``)?
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttentionWrapper.__init__: create self.heads as an nn.CellList")

    def construct(self, x):
        """(b, T, d_in) -> (b, T, num_heads * d_out)."""
        raise NotImplementedError("MultiHeadAttentionWrapper.construct: concatenate the heads' outputs")


class MultiHeadAttention(nn.Cell):
    """Efficient multi-head attention: one projection per Q/K/V, split into heads.

    Book section 3.6.2.

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` must
    raise ``ValueError`` if ``d_out`` is not divisible by ``num_heads``, then create, in
    this order:
        - ``self.d_out``, ``self.num_heads``, ``self.head_dim = d_out // num_heads``
        - ``self.W_query``, ``self.W_key``, ``self.W_value``:
          ``nn.Dense(d_in, d_out, has_bias=qkv_bias)``
        - ``self.out_proj``: ``nn.Dense(d_out, d_out)``
        - ``self.dropout``: ``nn.Dropout(p=dropout)``
        - a buffer ``mask`` (``register_buffer``) of shape (context_length, context_length),
          ones strictly above the diagonal

    ``construct(x)`` maps x of shape (b, T, d_in) to (b, T, d_out):
        1. project to queries, keys, values: (b, T, d_out)
        2. split into heads: (b, T, num_heads, head_dim), then (b, num_heads, T, head_dim)
        3. masked, scaled attention per head: weights (b, num_heads, T, T)
        4. dropout on the weights, weight the values: (b, num_heads, T, head_dim)
        5. merge heads back to (b, T, d_out) and apply ``out_proj``

    Hint: ``reshape`` only splits the last axis correctly while it is still last, so reshape
    first and ``swapaxes(1, 2)`` afterwards; merging needs the inverse. (In MindSpore,
    ``Tensor.transpose`` takes a whole permutation of the axes, like numpy.)
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttention.__init__: check d_out % num_heads, create the layers and the mask")

    def construct(self, x):
        """(b, T, d_in) -> (b, T, d_out)."""
        raise NotImplementedError("MultiHeadAttention.construct: split heads, masked attention, merge heads, out_proj")
