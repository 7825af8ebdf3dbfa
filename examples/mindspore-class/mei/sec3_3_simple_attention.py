"""3.3 - attention without trainable weights (MindSpore)."""
import mindspore
from mindspore import ops


def attention_scores_for_query(inputs, query_index):
    query = inputs[query_index]
    return ops.matmul(inputs, query)


def softmax_naive(x):
    return ops.exp(x) / ops.exp(x).sum(axis=-1, keepdims=True)


def context_vector_for_query(inputs, query_index):
    weights = ops.softmax(attention_scores_for_query(inputs, query_index), axis=0)
    return ops.matmul(weights, inputs)


def attention_scores(inputs):
    return ops.matmul(inputs, inputs.T)


def attention_weights(inputs):
    return ops.softmax(attention_scores(inputs), dim=-1)  # PyTorch habit: MindSpore says axis=


def context_vectors(inputs):
    return ops.matmul(attention_weights(inputs), inputs)
