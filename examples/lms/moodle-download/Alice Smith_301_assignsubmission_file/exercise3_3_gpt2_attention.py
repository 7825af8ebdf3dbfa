"""Exercise 3.3: initializing GPT-2 size attention modules."""
from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    """The smallest GPT-2's attention: 12 heads, 768-dim embeddings, 1024-token context.

    It has 2,360,064 parameters: 3 * 768 * 768 for W_query, W_key and W_value (no bias)
    plus 768 * 768 + 768 for out_proj.
    """
    return MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)
