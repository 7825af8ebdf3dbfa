"""Exercise 3.2: returning two-dimensional embedding vectors."""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    """Two heads with d_out=1 each: their concatenation is 2-dimensional."""
    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)
