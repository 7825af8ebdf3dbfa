"""练习 3.3：初始化 GPT-2 规模的注意力模块。

请把 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
from sec3_6_multi_head_attention import MultiHeadAttention  # noqa: F401


def build_gpt2_small_attention(dropout=0.0):
    """最小的 GPT-2 模型中的注意力模块。

    练习 3.3（对应书中 3.6.2 节）。用你的 MultiHeadAttention 类和最小的 GPT-2 的配置：
    12 个注意力头，输入和输出嵌入都是 768 维，上下文长度为 1024 个词元（查询、键、值
    都不带偏置）。

    参数：
        dropout：作用在注意力权重上的 dropout 比率。

    返回：
        一个 MultiHeadAttention，对 T <= 1024 把 (b, T, 768) 映射为 (b, T, 768)。

    提示：数一数参数来检查自己，``sum(p.numel() for p in m.parameters())``：书中给出的
    数目约为 236 万。
    """
    raise NotImplementedError("build_gpt2_small_attention：与最小的 GPT-2 规模相同的 MultiHeadAttention")
