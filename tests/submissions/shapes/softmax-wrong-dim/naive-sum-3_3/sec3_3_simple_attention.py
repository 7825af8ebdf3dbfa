"""3.3 with the naive softmax summing the wrong way, used for the weights too."""
import torch


def attention_scores_for_query(inputs, query_index):
    return inputs @ inputs[query_index]


def softmax_naive(x):
    e = x.exp()
    return e / e.sum(dim=0, keepdim=True)  # <- the mistake


def context_vector_for_query(inputs, query_index):
    return softmax_naive(attention_scores_for_query(inputs, query_index)) @ inputs


def attention_scores(inputs):
    return inputs @ inputs.T


def attention_weights(inputs):
    return softmax_naive(attention_scores(inputs))


def context_vectors(inputs):
    return attention_weights(inputs) @ inputs
