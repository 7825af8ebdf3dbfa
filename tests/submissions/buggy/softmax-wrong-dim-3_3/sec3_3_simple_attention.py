# Misconception: softmax-wrong-dim. The attention weights are normalised over the queries
# (dim=0, the columns) instead of over the keys (dim=-1, each row).
import torch


def attention_scores_for_query(inputs, query_index):
    return inputs @ inputs[query_index]


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def context_vector_for_query(inputs, query_index):
    weights = torch.softmax(attention_scores_for_query(inputs, query_index), dim=0)
    return weights @ inputs


def attention_scores(inputs):
    return inputs @ inputs.T


def attention_weights(inputs):
    return torch.softmax(attention_scores(inputs), dim=0)  # columns sum to 1, rows do not


def context_vectors(inputs):
    return attention_weights(inputs) @ inputs
