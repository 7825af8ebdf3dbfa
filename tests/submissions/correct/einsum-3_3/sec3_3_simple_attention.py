# A correct 3.3 written differently from the book: einsum, a numerically stable softmax and
# loops where the book uses matrix products.
import torch


def attention_scores_for_query(inputs, query_index):
    return torch.einsum("td,d->t", inputs, inputs[query_index])


def softmax_naive(x):
    shifted = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return shifted / shifted.sum(dim=-1, keepdim=True)


def context_vector_for_query(inputs, query_index):
    weights = softmax_naive(attention_scores_for_query(inputs, query_index))
    context = torch.zeros(inputs.shape[1])
    for weight, x in zip(weights, inputs):
        context += weight * x
    return context


def attention_scores(inputs):
    return torch.einsum("id,jd->ij", inputs, inputs)


def attention_weights(inputs):
    return torch.nn.functional.softmax(attention_scores(inputs), dim=1)


def context_vectors(inputs):
    return torch.einsum("ij,jd->id", attention_weights(inputs), inputs)
