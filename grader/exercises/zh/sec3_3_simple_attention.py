"""第 3.3 节：不含可训练权重的简单自注意力机制。

对应书中 3.3.1 和 3.3.2 节。每个函数都接收 ``inputs``：一个形状为 (T, d) 的张量，包含
T 个词元的嵌入向量，每个向量有 d 维，例如书中 "Your journey starts with one step"
这句话的六个三维嵌入向量。

请把每个 ``raise NotImplementedError(...)`` 替换为你的实现。
"""
import torch


def attention_scores_for_query(inputs, query_index):
    """所有输入相对于一个查询的注意力分数。

    对应书中 3.3.1 节。查询就是输入词元 ``inputs[query_index]``；它与第 i 个输入的
    注意力分数是第 i 个输入与查询的点积。

    参数：
        inputs：形状为 (T, d) 的词元嵌入张量。
        query_index：整数，``inputs`` 中作为查询的那一行（书中用 1，即 "journey"）。

    返回：
        形状为 (T,) 的张量，即未归一化的注意力分数。

    提示：用 ``torch.dot`` 写一个循环可以完成；一次矩阵与向量相乘更简洁。
    """
    raise NotImplementedError("attention_scores_for_query：所有输入与一个查询的点积")


def softmax_naive(x):
    """手写的 softmax，沿最后一个维度计算。

    对应书中 3.3.1 节。先对每个元素取指数，再除以这些指数之和，使最后一个维度上的值都为正、
    且和为 1。

    参数：
        x：任意形状的张量，例如 (T,) 或 (T, T)。

    返回：
        与 ``x`` 形状相同的张量。

    提示：``sum(dim=-1, keepdim=True)`` 会保留一个大小为 1 的维度，这样对二维输入做除法时
    也能正确广播。
    """
    raise NotImplementedError("softmax_naive：exp(x) 除以沿最后一个维度的 exp(x) 之和")


def context_vector_for_query(inputs, query_index):
    """一个查询的上下文向量。

    对应书中 3.3.1 节。先计算该查询的注意力分数，用 ``torch.softmax`` 把它们归一化为注意力
    权重，再返回所有输入按这些注意力权重加权求和的结果。

    参数：
        inputs：形状为 (T, d) 的词元嵌入张量。
        query_index：整数，``inputs`` 中作为查询的那一行。

    返回：
        形状为 (d,) 的张量，即上下文向量。

    提示：复用 ``attention_scores_for_query``；加权求和要用归一化后的注意力权重，而不是
    原始的注意力分数。
    """
    raise NotImplementedError("context_vector_for_query：用 softmax 得到的注意力权重对输入加权求和")


def attention_scores(inputs):
    """所有输入两两之间的注意力分数。

    对应书中 3.3.2 节。第 (i, j) 个元素是第 i 个输入与第 j 个输入的点积。

    参数：
        inputs：形状为 (T, d) 的词元嵌入张量。

    返回：
        形状为 (T, T) 的张量，即未归一化的注意力分数。

    提示：书中的两层嵌套循环可以合并成一次矩阵乘法。
    """
    raise NotImplementedError("attention_scores：所有输入两两之间的点积")


def attention_weights(inputs):
    """所有输入两两之间的注意力权重。

    对应书中 3.3.2 节。对注意力分数做归一化，使每一行之和为 1。

    参数：
        inputs：形状为 (T, d) 的词元嵌入张量。

    返回：
        形状为 (T, T) 的张量；每一行之和为 1。

    提示：``torch.softmax`` 需要一个 ``dim`` 参数：哪一个维度的和应当为 1？
    """
    raise NotImplementedError("attention_weights：对注意力分数逐行做 softmax")


def context_vectors(inputs):
    """每个输入对应一个上下文向量。

    对应书中 3.3.2 节。第 i 行是以第 i 个输入为查询时，所有输入按注意力权重加权求和的结果。

    参数：
        inputs：形状为 (T, d) 的词元嵌入张量。

    返回：
        形状为 (T, d) 的张量，即上下文向量。

    提示：一次性算出全部 T 个加权和，只需要一次矩阵乘法。
    """
    raise NotImplementedError("context_vectors：注意力权重乘以输入")
