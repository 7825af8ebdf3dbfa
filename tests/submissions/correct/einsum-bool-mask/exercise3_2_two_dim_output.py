from sec3_6_multi_head_attention import MultiHeadAttentionWrapper


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    num_heads = 2
    d_out = 2 // num_heads
    return MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads)
