"""Exercise 3.2 (MindSpore)."""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)
