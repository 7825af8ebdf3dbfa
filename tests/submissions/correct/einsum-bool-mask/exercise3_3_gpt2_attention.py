from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(d_in=768, d_out=768, context_length=1024, dropout=dropout, num_heads=12, qkv_bias=False)
