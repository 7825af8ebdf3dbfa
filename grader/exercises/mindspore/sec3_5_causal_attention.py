"""Section 3.5: hiding future words with causal attention (MindSpore).

第 3.5 节：利用因果注意力隐藏未来词汇。

Book sections 3.5.1 (causal mask, 因果掩码), 3.5.2 (dropout) and 3.5.3 (the CausalAttention
class).

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import mindspore  # noqa: F401
from mindspore import nn, ops  # noqa: F401


def simple_causal_mask(num_tokens):
    """The simple causal mask: which positions a token may attend to.

    Book section 3.5.1.

    Args:
        num_tokens: int T.

    Returns:
        (T, T) float mindspore.Tensor with ones on and below the diagonal and zeros above it.

    Hint: ``ops.tril`` keeps the lower triangle of a matrix (``ops.ones((T, T))``).
    """
    raise NotImplementedError("simple_causal_mask: ones on and below the diagonal")


def mask_and_renormalize(attn_weights):
    """Mask attention weights that were already softmax-normalised.

    Book section 3.5.1 (the first, simple approach). Zero every weight above the diagonal,
    then divide each row by its new sum so that rows sum to 1 again.

    Args:
        attn_weights: (T, T) mindspore.Tensor (or (..., T, T)), rows summing to 1.

    Returns:
        mindspore.Tensor of the same shape: zeros above the diagonal, rows summing to 1.

    Hint: multiply by the simple mask; ``.sum(axis=-1, keepdims=True)`` makes the row sums
    broadcast.
    """
    raise NotImplementedError("mask_and_renormalize: zero the future, then renormalise the rows")


def masked_attention_weights(attn_scores, d_k):
    """Causal attention weights computed from raw scores with the -inf trick.

    Book section 3.5.1 (the more efficient approach). Set the scores above the diagonal to
    minus infinity, then apply the scaled softmax: softmax(scores / sqrt(d_k)) over the
    last axis. exp(-inf) = 0, so the future gets zero weight and rows still sum to 1.

    Args:
        attn_scores: (T, T) mindspore.Tensor (or (..., T, T)) of unnormalised scores.
        d_k: int, the key dimension used for scaling.

    Returns:
        mindspore.Tensor of the same shape as ``attn_scores``.

    Hint: build a mask of ones strictly above the diagonal (``ops.triu(..., diagonal=1)``)
    and use ``scores.masked_fill(mask.bool(), float("-inf"))``, which returns a new tensor.
    Keep the diagonal: a token may attend to itself.
    """
    raise NotImplementedError("masked_attention_weights: -inf above the diagonal, then scaled softmax")


class CausalAttention(nn.Cell):
    """Causal self-attention with dropout, for batched inputs.

    Book section 3.5.3.

    ``__init__(d_in, d_out, context_length, dropout, qkv_bias=False)`` must create, in
    this order:
        - ``self.W_query``, ``self.W_key``, ``self.W_value``:
          ``nn.Dense(d_in, d_out, has_bias=qkv_bias)``
        - ``self.dropout``: ``nn.Dropout(p=dropout)``. Write ``p=``: MindSpore reads a
          positional argument as keep_prob, the share of weights to KEEP.
        - a buffer ``mask`` (``self.register_buffer("mask", ...)``) of shape
          (context_length, context_length) with ones strictly above the diagonal: a buffer
          is saved with the Cell but never trained.

    ``construct(x)`` maps x of shape (b, T, d_in) to (b, T, d_out), for any
    T <= context_length: project, compute scores, mask the future with -inf, scaled
    softmax, dropout on the attention weights, weight the values.

    A Cell starts in inference mode: ``set_train(True)`` turns dropout on and
    ``set_train(False)`` off (MindSpore has no ``.train()``/``.eval()``).

    Hint: with a batch dimension, swap the keys' last two axes only
    (``keys.swapaxes(1, 2)``); cut the mask to the current number of tokens.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("CausalAttention.__init__: create W_query, W_key, W_value, dropout and the mask buffer")

    def construct(self, x):
        """(b, T, d_in) -> (b, T, d_out) context vectors."""
        raise NotImplementedError("CausalAttention.construct: masked scaled dot-product attention with dropout")
