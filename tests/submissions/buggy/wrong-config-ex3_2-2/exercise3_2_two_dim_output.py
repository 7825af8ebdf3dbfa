"""Exercise 3.2 with a bug: one head of size 2 instead of two heads of size 1."""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    return MultiHeadAttentionWrapper(d_in, d_out=2, context_length=context_length, dropout=dropout, num_heads=1)
