"""第 3.5 节：利用因果注意力隐藏未来的词元。

对应书中 3.5.1 节（因果掩码）、3.5.2 节（dropout）和 3.5.3 节（CausalAttention 类）。

请把每个 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
import torch
import torch.nn as nn


def simple_causal_mask(num_tokens):
    """简单的因果掩码：每个词元可以关注哪些位置。

    对应书中 3.5.1 节。

    参数：
        num_tokens：整数 T。

    返回：
        形状为 (T, T) 的浮点张量，对角线及其下方为 1，对角线上方为 0。

    提示：PyTorch 有一个取矩阵下三角部分的函数。
    """
    raise NotImplementedError("simple_causal_mask：对角线及其下方为 1")


def mask_and_renormalize(attn_weights):
    """对已经用 softmax 归一化过的注意力权重做掩码。

    对应书中 3.5.1 节（第一种、简单的做法）。把对角线上方的注意力权重全部置零，再把每一行
    除以它新的和，使每一行之和重新为 1。

    参数：
        attn_weights：形状为 (T, T)（或 (..., T, T)）的张量，每一行之和为 1。

    返回：
        形状相同的张量：对角线上方为 0，每一行之和为 1。

    提示：乘以简单掩码；``keepdim=True`` 让每行的和能够正确广播。
    """
    raise NotImplementedError("mask_and_renormalize：把未来位置置零，再对每一行重新归一化")


def masked_attention_weights(attn_scores, d_k):
    """用负无穷技巧从原始注意力分数计算因果注意力权重。

    对应书中 3.5.1 节（更高效的做法）。把对角线上方的注意力分数设为负无穷，再做缩放后的
    softmax：沿最后一个维度计算 softmax(scores / sqrt(d_k))。exp(-inf) = 0，所以未来位置的
    注意力权重为零，每一行之和仍然为 1。

    参数：
        attn_scores：形状为 (T, T)（或 (..., T, T)）的张量，即未归一化的注意力分数。
        d_k：整数，用于缩放的键的维度。

    返回：
        与 ``attn_scores`` 形状相同的张量。

    提示：构造一个严格位于对角线上方为 1 的掩码，再使用 ``masked_fill``。
    保留对角线：一个词元可以关注它自己。
    """
    raise NotImplementedError("masked_attention_weights：对角线上方设为负无穷，再做缩放后的 softmax")


class CausalAttention(nn.Module):
    """带 dropout 的因果自注意力，输入带批量维度。

    对应书中 3.5.3 节。

    ``__init__(d_in, d_out, context_length, dropout, qkv_bias=False)`` 必须按以下顺序创建：
        - ``self.W_query``、``self.W_key``、``self.W_value``：``nn.Linear(d_in, d_out)``，
          只有 ``qkv_bias`` 为真时才带偏置
        - ``self.dropout``：``nn.Dropout(dropout)``
        - 一个缓冲区 ``mask``（用 ``self.register_buffer`` 注册），形状为
          (context_length, context_length)，严格位于对角线上方的元素为 1

    ``forward(x)`` 把形状为 (b, T, d_in) 的 x 映射为 (b, T, d_out)，对任意
    T <= context_length 都要成立：投影、计算注意力分数、用负无穷对未来位置做掩码、缩放后的
    softmax、对注意力权重做 dropout，最后对值加权求和。

    提示：有批量维度时，只转置键的最后两个维度；把掩码截取到当前的词元数。
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("CausalAttention.__init__：创建 W_query、W_key、W_value、dropout 和掩码缓冲区")

    def forward(self, x):
        """(b, T, d_in) -> (b, T, d_out) 的上下文向量。"""
        raise NotImplementedError("CausalAttention.forward：带掩码、缩放和 dropout 的点积注意力")
