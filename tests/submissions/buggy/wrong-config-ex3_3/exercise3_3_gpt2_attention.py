"""Exercise 3.3 with a bug: the context length is set to the embedding size (768) instead of 1024."""
from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(768, 768, 768, dropout, num_heads=12)
