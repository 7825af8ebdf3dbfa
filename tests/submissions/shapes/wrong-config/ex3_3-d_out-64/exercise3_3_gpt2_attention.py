"""Exercise 3.3 giving each head's size as d_out."""
from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(768, 64, 1024, dropout, num_heads=12)  # <- the mistake
