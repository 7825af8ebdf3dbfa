"""练习 3.2：返回二维嵌入向量（MindSpore 版）。

请把 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
from sec3_6_multi_head_attention import MultiHeadAttentionWrapper  # noqa: F401


def build_two_dim_wrapper(d_in, context_length, dropout=0.0):
    """一个有两个头、输出向量为二维的 MultiHeadAttentionWrapper。

    练习 3.2（对应书中 3.6.1 节）。书中 ``num_heads=2``、``d_out=2`` 的包装类返回四维的
    上下文向量。请只修改参数（不修改类），使拼接后的输出为二维，同时保留两个头。

    参数：
        d_in：输入嵌入的维度。
        context_length：支持的最长序列长度，即上下文长度。
        dropout：作用在注意力权重上的 dropout 比率。

    返回：
        一个把 (b, T, d_in) 映射为 (b, T, 2) 的 MultiHeadAttentionWrapper。

    提示：输出的维度等于 num_heads * d_out。
    """
    raise NotImplementedError("build_two_dim_wrapper：有两个头、输出为二维的包装类")
