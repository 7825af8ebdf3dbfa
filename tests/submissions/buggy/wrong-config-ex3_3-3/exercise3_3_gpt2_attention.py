"""Exercise 3.3 with a bug: qkv_bias=True, although GPT-2 small's configuration here has no query/key/value bias."""
from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(768, 768, 1024, dropout, num_heads=12, qkv_bias=True)
