"""Exercise 3.2 passing the wanted output size where the input size goes."""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    return MultiHeadAttentionWrapper(2, 1, context_length, dropout, num_heads=2)  # <- the mistake
