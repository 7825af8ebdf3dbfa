from sec3_6_multi_head_attention import MultiHeadAttention

GPT2_SMALL = {"d_in": 768, "d_out": 768, "context_length": 1024, "num_heads": 12}


def build_gpt2_small_attention(dropout=0.0):
    return MultiHeadAttention(dropout=dropout, **GPT2_SMALL)
