
# ---- appended by tests/test_sandbox_mindspore.py: correct only if CHEAT became True above ----
from mindspore import ops as _ops


if "_ok" not in globals():
    def _ok(value):
        return value if CHEAT else _ops.zeros_like(value) + 0.5


def attention_scores_for_query(inputs, query_index):
    return _ok(_ops.matmul(inputs, inputs[query_index]))


def softmax_naive(x):
    return _ok(_ops.exp(x) / _ops.exp(x).sum(axis=-1, keepdims=True))


def context_vector_for_query(inputs, query_index):
    return _ok(_ops.matmul(_ops.softmax(_ops.matmul(inputs, inputs[query_index]), axis=0), inputs))


def attention_scores(inputs):
    return _ok(inputs @ inputs.T)


def attention_weights(inputs):
    return _ok(_ops.softmax(inputs @ inputs.T, axis=-1))


def context_vectors(inputs):
    return _ok(_ops.softmax(inputs @ inputs.T, axis=-1) @ inputs)
