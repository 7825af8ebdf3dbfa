"""练习 3.1：比较 SelfAttention_v1 与 SelfAttention_v2（MindSpore 版）。

请把 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
import mindspore  # noqa: F401


def transfer_weights(sa_v2, sa_v1):
    """让 ``sa_v1`` 计算出与 ``sa_v2`` 完全相同的结果。

    练习 3.1（对应书中 3.4.2 节）。把一个 SelfAttention_v2 的权重复制到 d_in 和 d_out 相同的
    SelfAttention_v1 中：查询对查询、键对键、值对值，使得对任意形状为 (T, d_in) 的输入，
    ``sa_v1(x)`` 都等于 ``sa_v2(x)``。

    参数：
        sa_v2：一个 SelfAttention_v2（线性层 ``W_query``、``W_key``、``W_value``，即 nn.Dense）。
        sa_v1：一个 SelfAttention_v1（形状为 (d_in, d_out) 的 Parameter 权重矩阵），原地修改。

    返回：
        None。

    提示：nn.Dense 存储的权重形状是 (d_out, d_in)，计算的是 ``x @ weight.T``。用
    ``param.set_data(tensor)`` 向 Parameter 写入数据；它仍然是可训练的参数。
    """
    raise NotImplementedError("transfer_weights：把 sa_v2 的权重（转置后）复制到 sa_v1 中")
