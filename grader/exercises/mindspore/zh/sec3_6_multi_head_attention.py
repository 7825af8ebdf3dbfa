"""第 3.6 节：把单头注意力扩展为多头注意力（MindSpore 版）。

对应书中 3.6.1 节（堆叠多个注意力头）和 3.6.2 节（通过权重划分实现多头注意力）。

请把每个 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
import mindspore  # noqa: F401
from mindspore import nn, ops  # noqa: F401

from sec3_5_causal_attention import CausalAttention  # noqa: F401  (your class from 3.5)


class MultiHeadAttentionWrapper(nn.Cell):
    """堆叠多个 CausalAttention 注意力头得到的多头注意力。

    对应书中 3.6.1 节。

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` 必须创建：
        - ``self.heads``：一个 ``nn.CellList``，包含 ``num_heads`` 个
          ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)`` Cell

    ``construct(x)`` 把形状为 (b, T, d_in) 的 x 映射为 (b, T, num_heads * d_out)：运行每个头，
    再把结果拼接起来。

    提示：普通的 Python 列表会让 Cell 看不到各个头的参数（``trainable_params()`` 找不到它们）。
    各个头的输出应当沿哪个轴并排拼接（``ops.cat(..., axis=...)``）？
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttentionWrapper.__init__：把 self.heads 创建为 nn.CellList")

    def construct(self, x):
        """把 (b, T, d_in) 映射为 (b, T, num_heads * d_out)。"""
        raise NotImplementedError("MultiHeadAttentionWrapper.construct：拼接各个头的输出")


class MultiHeadAttention(nn.Cell):
    """高效的多头注意力：查询、键、值各用一次投影，再划分到各个头。

    对应书中 3.6.2 节。

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`` 在
    ``d_out`` 不能被 ``num_heads`` 整除时必须抛出 ``ValueError``，然后按以下顺序创建：
        - ``self.d_out``、``self.num_heads``、``self.head_dim = d_out // num_heads``
        - ``self.W_query``、``self.W_key``、``self.W_value``：
          ``nn.Dense(d_in, d_out, has_bias=qkv_bias)``
        - ``self.out_proj``：``nn.Dense(d_out, d_out)``，即输出投影层
        - ``self.dropout``：``nn.Dropout(p=dropout)``
        - 一个形状为 (context_length, context_length) 的缓冲区 ``mask``（``register_buffer``），
          严格位于对角线上方的元素为 1

    ``construct(x)`` 把形状为 (b, T, d_in) 的 x 映射为 (b, T, d_out)：
        1. 投影为查询、键和值：(b, T, d_out)
        2. 划分到各个头：先变为 (b, T, num_heads, head_dim)，再变为 (b, num_heads, T, head_dim)
        3. 每个头分别做带掩码、缩放的注意力：注意力权重的形状为 (b, num_heads, T, T)
        4. 对注意力权重做 dropout，再对值加权求和：(b, num_heads, T, head_dim)
        5. 把各个头合并回 (b, T, d_out)，再应用 ``out_proj``

    提示：只有当最后一个轴还在最后时，``reshape`` 才能正确地拆分它，所以先 reshape 再
    ``swapaxes(1, 2)``；合并时要做相反的操作。（在 MindSpore 中，``Tensor.transpose`` 像
    numpy 一样接收所有轴的一个排列。）
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttention.__init__：检查 d_out % num_heads，创建各层和掩码")

    def construct(self, x):
        """把 (b, T, d_in) 映射为 (b, T, d_out)。"""
        raise NotImplementedError("MultiHeadAttention.construct：划分头、带掩码的注意力、合并头、out_proj")
