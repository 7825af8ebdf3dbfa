"""Section 3.3: a simple self-attention mechanism without trainable weights.

Book sections 3.3.1 and 3.3.2. Every function takes ``inputs``, a (T, d) tensor holding
T token embeddings of size d, e.g. the book's six 3-dimensional embeddings of
"Your journey starts with one step".

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import torch


def attention_scores_for_query(inputs, query_index):
    """Attention scores of every input with respect to one query.

    Book section 3.3.1. The query is the input token ``inputs[query_index]``; its score
    with input i is the dot product of input i and the query.

    Args:
        inputs: (T, d) tensor of token embeddings.
        query_index: int, which row of ``inputs`` is the query (the book uses 1, "journey").

    Returns:
        (T,) tensor of unnormalised attention scores.

    Hint: a loop with ``torch.dot`` works; a single matrix-vector product is shorter.
    """
    raise NotImplementedError("attention_scores_for_query: dot products of all inputs with one query")


def softmax_naive(x):
    """A hand-written softmax along the last dimension.

    Book section 3.3.1. Exponentiate every element, then divide by the sum of the
    exponentials, so that the values along the last dimension are positive and sum to 1.

    Args:
        x: tensor of any shape, e.g. (T,) or (T, T).

    Returns:
        tensor of the same shape as ``x``.

    Hint: ``sum(dim=-1, keepdim=True)`` keeps a size-1 dimension so the division
    broadcasts correctly for 2-D inputs too.
    """
    raise NotImplementedError("softmax_naive: exp(x) divided by the sum of exp(x) over the last dim")


def context_vector_for_query(inputs, query_index):
    """The context vector of one query.

    Book section 3.3.1. Compute the query's attention scores, normalise them with
    ``torch.softmax`` into attention weights, and return the sum of all inputs weighted
    by those attention weights.

    Args:
        inputs: (T, d) tensor of token embeddings.
        query_index: int, which row of ``inputs`` is the query.

    Returns:
        (d,) tensor, the context vector.

    Hint: reuse ``attention_scores_for_query``; build the weighted sum from the
    normalised weights, not from the raw scores.
    """
    raise NotImplementedError("context_vector_for_query: softmax-weighted sum of the inputs")


def attention_scores(inputs):
    """Attention scores of all inputs against all inputs.

    Book section 3.3.2. Entry (i, j) is the dot product of input i and input j.

    Args:
        inputs: (T, d) tensor of token embeddings.

    Returns:
        (T, T) tensor of unnormalised attention scores.

    Hint: the two nested loops of the book collapse into one matrix multiplication.
    """
    raise NotImplementedError("attention_scores: all pairwise dot products")


def attention_weights(inputs):
    """Attention weights of all inputs against all inputs.

    Book section 3.3.2. Normalise the attention scores so that every row sums to 1.

    Args:
        inputs: (T, d) tensor of token embeddings.

    Returns:
        (T, T) tensor; each row sums to 1.

    Hint: ``torch.softmax`` needs a ``dim``: which dimension must sum to 1?
    """
    raise NotImplementedError("attention_weights: softmax of the attention scores, row by row")


def context_vectors(inputs):
    """One context vector per input.

    Book section 3.3.2. Row i is the attention-weighted sum of all inputs for query i.

    Args:
        inputs: (T, d) tensor of token embeddings.

    Returns:
        (T, d) tensor of context vectors.

    Hint: all T weighted sums at once are one matrix multiplication.
    """
    raise NotImplementedError("context_vectors: attention weights times the inputs")
