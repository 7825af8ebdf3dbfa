"""第 3.4 节：带可训练权重的自注意力（缩放点积注意力）。

对应书中 3.4.1 和 3.4.2 节。输入是形状为 (T, d_in) 的张量：这里还没有批量维度。

请把每个 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
import torch
import torch.nn as nn


def project_qkv(x, W_query, W_key, W_value):
    """把输入投影为查询、键和值。

    对应书中 3.4.1 节。

    参数：
        x：形状为 (T, d_in) 的词元嵌入张量（单个形状为 (d_in,) 的词元也可以）。
        W_query、W_key、W_value：形状为 (d_in, d_out) 的权重矩阵。

    返回：
        元组 ``(queries, keys, values)``，每个张量的形状都是 (T, d_out)。

    提示：每一次投影都是输入与一个权重矩阵的矩阵乘法。
    """
    raise NotImplementedError("project_qkv：把输入分别乘以 W_query、W_key 和 W_value")


def scaled_attention_weights(queries, keys):
    """缩放点积注意力的注意力权重。

    对应书中 3.4.1 节。注意力分数是查询与键的点积；注意力权重是注意力分数除以键的维度
    d_k 的平方根之后再做 softmax 的结果。

    参数：
        queries：形状为 (T, d_k) 的张量（或单个形状为 (d_k,) 的查询）。
        keys：形状为 (T, d_k) 的张量。

    返回：
        形状为 (T, T) 的张量（单个查询时为 (T,)）；每一行之和为 1。

    提示：d_k 是键的最后一个维度的大小。先缩放，再做 softmax。
    """
    raise NotImplementedError("scaled_attention_weights：计算 softmax(q @ k^T / sqrt(d_k))")


class SelfAttention_v1(nn.Module):
    """使用显式权重矩阵的紧凑自注意力类。

    对应书中 3.4.2 节。

    ``__init__(d_in, d_out)`` 必须按以下顺序创建（在 ``torch.manual_seed`` 之后，这个顺序
    决定了每个参数得到哪些随机数）：
        - ``self.W_query``：``nn.Parameter(torch.rand(d_in, d_out))``
        - ``self.W_key``：形状和初始化方式相同
        - ``self.W_value``：形状和初始化方式相同

    ``forward(x)`` 把形状为 (T, d_in) 的 x 映射为形状为 (T, d_out) 的上下文向量：先投影为
    查询、键和值，再计算缩放后的注意力权重，最后对值加权求和。

    提示：使用 ``torch.manual_seed(123)`` 和书中的输入时，输出的第一行约为
    [0.2996, 0.8053]。
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("SelfAttention_v1.__init__：把 W_query、W_key、W_value 创建为 nn.Parameter")

    def forward(self, x):
        """(T, d_in) -> (T, d_out) 的上下文向量。"""
        raise NotImplementedError("SelfAttention_v1.forward：缩放点积注意力")


class SelfAttention_v2(nn.Module):
    """用 nn.Linear 线性层做投影的自注意力。

    对应书中 3.4.2 节。

    ``__init__(d_in, d_out, qkv_bias=False)`` 必须按以下顺序创建：
        - ``self.W_query``：``nn.Linear(d_in, d_out)``，只有 ``qkv_bias`` 为真时才带偏置
        - ``self.W_key``：同上
        - ``self.W_value``：同上

    ``forward(x)`` 把形状为 (T, d_in) 的 x 映射为 (T, d_out)，与 SelfAttention_v1 完全相同，
    只是调用线性层，而不是直接乘以权重矩阵。

    提示：使用 ``torch.manual_seed(789)`` 和书中的输入时，输出的第一行约为
    [-0.0739, 0.0713]。
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("SelfAttention_v2.__init__：把 W_query、W_key、W_value 创建为 nn.Linear")

    def forward(self, x):
        """(T, d_in) -> (T, d_out) 的上下文向量。"""
        raise NotImplementedError("SelfAttention_v2.forward：缩放点积注意力")
