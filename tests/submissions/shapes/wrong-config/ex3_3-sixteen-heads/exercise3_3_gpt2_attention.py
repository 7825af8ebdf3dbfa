"""Exercise 3.3 with 16 heads."""
from sec3_6_multi_head_attention import MultiHeadAttention

SIZES = dict(d_in=768, d_out=768, context_length=1024, num_heads=16)


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(dropout=dropout, **SIZES)  # <- the mistake
