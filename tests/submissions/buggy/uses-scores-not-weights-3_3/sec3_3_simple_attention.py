# Misconception: uses-scores-not-weights. The context vectors are built from the raw attention
# scores instead of the softmax-normalised attention weights.
import torch


def attention_scores_for_query(inputs, query_index):
    return inputs @ inputs[query_index]


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)


def context_vector_for_query(inputs, query_index):
    attn_scores = attention_scores_for_query(inputs, query_index)
    return attn_scores @ inputs  # should weight the inputs by softmax(attn_scores)


def attention_scores(inputs):
    return inputs @ inputs.T


def attention_weights(inputs):
    return torch.softmax(attention_scores(inputs), dim=-1)


def context_vectors(inputs):
    return attention_scores(inputs) @ inputs  # should use attention_weights(inputs)
