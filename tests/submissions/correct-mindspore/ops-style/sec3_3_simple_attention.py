"""A correct 3.3 written with other MindSpore calls: loops, ops.dot-free sums, nn.Softmax."""
import mindspore as ms
from mindspore import nn, ops

_softmax = nn.Softmax(axis=-1)


def attention_scores_for_query(inputs, query_index):
    return (inputs * inputs[query_index]).sum(axis=-1)


def softmax_naive(x):
    e = ops.exp(x)
    return e / ops.ReduceSum(keep_dims=True)(e, -1)


def context_vector_for_query(inputs, query_index):
    w = _softmax(attention_scores_for_query(inputs, query_index))
    return (w[:, None] * inputs).sum(axis=0)


def attention_scores(inputs):
    return ops.matmul(inputs, ops.transpose(inputs, (1, 0)))


def attention_weights(inputs):
    return _softmax(attention_scores(inputs))


def context_vectors(inputs):
    return ops.matmul(attention_weights(inputs), inputs)
