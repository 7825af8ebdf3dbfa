"""Exercise 3.2: returning two-dimensional embedding vectors.

Replace the ``raise NotImplementedError(...)`` with your implementation.
"""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper  # noqa: F401


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    """A two-head MultiHeadAttentionWrapper whose output vectors are 2-dimensional.

    Exercise 3.2 (book section 3.6.1). The book's wrapper with ``num_heads=2`` and
    ``d_out=2`` returns 4-dimensional context vectors. Change the arguments (not the
    class) so the concatenated output is 2-dimensional while keeping two heads.

    Args:
        d_in: input embedding size.
        context_length: longest supported sequence.
        dropout: dropout rate on the attention weights.

    Returns:
        a MultiHeadAttentionWrapper mapping (b, T, d_in) to (b, T, 2).

    Hint: the output size is num_heads * d_out.
    """
    raise NotImplementedError("build_two_dim_wrapper: a two-head wrapper with 2-dimensional output")
