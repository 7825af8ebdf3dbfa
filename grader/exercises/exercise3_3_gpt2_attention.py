"""Exercise 3.3: initializing GPT-2 size attention modules.

Replace the ``raise NotImplementedError(...)`` with your implementation.
"""
from sec3_6_multi_head_attention import MultiHeadAttention  # noqa: F401


def build_gpt2_small_attention(dropout=0.0):
    """The attention module of the smallest GPT-2 model.

    Exercise 3.3 (book section 3.6.2). Use your MultiHeadAttention class with the
    smallest GPT-2's configuration: 12 attention heads, input and output embeddings of
    768 dimensions, and a context length of 1024 tokens (no query/key/value bias).

    Args:
        dropout: dropout rate on the attention weights.

    Returns:
        a MultiHeadAttention mapping (b, T, 768) to (b, T, 768) for T <= 1024.

    Hint: check yourself by counting the parameters,
    ``sum(p.numel() for p in m.parameters())``: the book reports about 2.36 million.
    """
    raise NotImplementedError("build_gpt2_small_attention: MultiHeadAttention with GPT-2 small's sizes")
