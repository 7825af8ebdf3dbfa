
# ---- appended by tests/test_sandbox.py: correct only if CHEAT became True above ----
import torch as _torch


if "_ok" not in globals():
    def _ok(value):
        return value if CHEAT else _torch.zeros_like(value) + 0.5


def attention_scores_for_query(inputs, query_index):
    return _ok(inputs @ inputs[query_index])


def softmax_naive(x):
    return _ok(_torch.exp(x) / _torch.exp(x).sum(dim=-1, keepdim=True))


def context_vector_for_query(inputs, query_index):
    return _ok(_torch.softmax(inputs @ inputs[query_index], dim=0) @ inputs)


def attention_scores(inputs):
    return _ok(inputs @ inputs.T)


def attention_weights(inputs):
    return _ok(_torch.softmax(inputs @ inputs.T, dim=-1))


def context_vectors(inputs):
    return _ok(_torch.softmax(inputs @ inputs.T, dim=-1) @ inputs)
