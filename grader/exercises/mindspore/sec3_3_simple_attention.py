"""Section 3.3: a simple self-attention mechanism without trainable weights (MindSpore).

第 3.3 节：不含可训练权重的简单自注意力机制。

Book sections 3.3.1 and 3.3.2. Every function takes ``inputs``, a (T, d) ``mindspore.Tensor``
holding T token embeddings (词元嵌入) of size d, e.g. the book's six 3-dimensional embeddings of
"Your journey starts with one step".

Replace each ``raise NotImplementedError(...)`` with your implementation. MindSpore names the
dimension a function works along ``axis`` (PyTorch: ``dim``).
"""
import mindspore  # noqa: F401
from mindspore import ops  # noqa: F401


def attention_scores_for_query(inputs, query_index):
    """Attention scores (注意力分数) of every input with respect to one query (查询).

    Book section 3.3.1. The query is the input token ``inputs[query_index]``; its score
    with input i is the dot product of input i and the query.

    Args:
        inputs: (T, d) mindspore.Tensor of token embeddings.
        query_index: int, which row of ``inputs`` is the query (the book uses 1, "journey").

    Returns:
        (T,) mindspore.Tensor of unnormalised attention scores.

    Hint: a loop with ``ops.dot`` works; a single ``ops.matmul`` of the inputs and the
    query is shorter.
    """
    raise NotImplementedError("attention_scores_for_query: dot products of all inputs with one query")


def softmax_naive(x):
    """A hand-written softmax along the last axis.

    Book section 3.3.1. Exponentiate every element, then divide by the sum of the
    exponentials, so that the values along the last axis are positive and sum to 1.

    Args:
        x: mindspore.Tensor of any shape, e.g. (T,) or (T, T).

    Returns:
        mindspore.Tensor of the same shape as ``x``.

    Hint: ``ops.exp``, then ``.sum(axis=-1, keepdims=True)``: keeping a size-1 axis makes
    the division broadcast correctly for 2-D inputs too.
    """
    raise NotImplementedError("softmax_naive: exp(x) divided by the sum of exp(x) over the last axis")


def context_vector_for_query(inputs, query_index):
    """The context vector (上下文向量) of one query.

    Book section 3.3.1. Compute the query's attention scores, normalise them with
    ``ops.softmax`` into attention weights (注意力权重), and return the sum of all inputs
    weighted by those attention weights.

    Args:
        inputs: (T, d) mindspore.Tensor of token embeddings.
        query_index: int, which row of ``inputs`` is the query.

    Returns:
        (d,) mindspore.Tensor, the context vector.

    Hint: reuse ``attention_scores_for_query``; build the weighted sum from the
    normalised weights, not from the raw scores.
    """
    raise NotImplementedError("context_vector_for_query: softmax-weighted sum of the inputs")


def attention_scores(inputs):
    """Attention scores of all inputs against all inputs.

    Book section 3.3.2. Entry (i, j) is the dot product of input i and input j.

    Args:
        inputs: (T, d) mindspore.Tensor of token embeddings.

    Returns:
        (T, T) mindspore.Tensor of unnormalised attention scores.

    Hint: the two nested loops of the book collapse into one matrix multiplication
    (``@`` or ``ops.matmul``; ``inputs.T`` is the transpose).
    """
    raise NotImplementedError("attention_scores: all pairwise dot products")


def attention_weights(inputs):
    """Attention weights of all inputs against all inputs.

    Book section 3.3.2. Normalise the attention scores so that every row sums to 1.

    Args:
        inputs: (T, d) mindspore.Tensor of token embeddings.

    Returns:
        (T, T) mindspore.Tensor; each row sums to 1.

    Hint: ``ops.softmax`` needs an ``axis`` (not ``dim``): which axis must sum to 1?
    """
    raise NotImplementedError("attention_weights: softmax of the attention scores, row by row")


def context_vectors(inputs):
    """One context vector per input.

    Book section 3.3.2. Row i is the attention-weighted sum of all inputs for query i.

    Args:
        inputs: (T, d) mindspore.Tensor of token embeddings.

    Returns:
        (T, d) mindspore.Tensor of context vectors.

    Hint: all T weighted sums at once are one matrix multiplication.
    """
    raise NotImplementedError("context_vectors: attention weights times the inputs")
