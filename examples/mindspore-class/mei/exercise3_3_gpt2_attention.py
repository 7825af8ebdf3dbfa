"""Exercise 3.3 (MindSpore)."""
from sec3_6_multi_head_attention import MultiHeadAttention


def build_gpt2_small_attention(dropout=0.0):
    model = MultiHeadAttention(768, 768, 1024, dropout, num_heads=12)
    model.eval()  # PyTorch habit: a Cell is switched with set_train(False)
    return model
