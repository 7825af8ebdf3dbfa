from sec3_6_multi_head_attention import MultiHeadAttention

GPT_CONFIG = {"emb_dim": 768, "n_heads": 12, "context_length": 1024, "qkv_bias": False}


def build_gpt2_small_attention(dropout=0.0):
    c = GPT_CONFIG
    return MultiHeadAttention(c["emb_dim"], c["emb_dim"], c["context_length"], dropout, c["n_heads"], c["qkv_bias"])
