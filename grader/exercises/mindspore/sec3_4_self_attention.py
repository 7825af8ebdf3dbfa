"""Section 3.4: self-attention with trainable weights (scaled dot-product attention), MindSpore.

第 3.4 节：带可训练权重的自注意力（缩放点积注意力）。

Book sections 3.4.1 and 3.4.2. Inputs are (T, d_in) ``mindspore.Tensor``s: no batch dimension yet.
Classes are ``mindspore.nn.Cell``s; their forward computation is the method ``construct``.

Replace each ``raise NotImplementedError(...)`` with your implementation.
"""
import mindspore  # noqa: F401
from mindspore import Parameter, nn, ops  # noqa: F401


def project_qkv(x, W_query, W_key, W_value):
    """Project the inputs to queries, keys and values (查询、键、值).

    Book section 3.4.1.

    Args:
        x: (T, d_in) mindspore.Tensor of token embeddings (a single (d_in,) token works too).
        W_query, W_key, W_value: (d_in, d_out) weight matrices (权重矩阵).

    Returns:
        tuple ``(queries, keys, values)``, each of shape (T, d_out).

    Hint: each projection is a matrix multiplication of the inputs with one weight matrix.
    """
    raise NotImplementedError("project_qkv: multiply the inputs by W_query, W_key and W_value")


def scaled_attention_weights(queries, keys):
    """Scaled dot-product attention weights (缩放点积注意力权重).

    Book section 3.4.1. Scores are the dot products of queries and keys; the weights are
    the softmax of the scores divided by the square root of the key dimension d_k.

    Args:
        queries: (T, d_k) mindspore.Tensor (or a single (d_k,) query).
        keys: (T, d_k) mindspore.Tensor.

    Returns:
        (T, T) mindspore.Tensor (or (T,) for a single query); rows sum to 1.

    Hint: d_k is the size of the keys' last axis. Scale before ``ops.softmax(..., axis=-1)``.
    """
    raise NotImplementedError("scaled_attention_weights: softmax(q @ k^T / sqrt(d_k))")


class SelfAttention_v1(nn.Cell):
    """A compact self-attention class with explicit weight matrices.

    Book section 3.4.2.

    ``__init__(d_in, d_out)`` must create, in this order (the order fixes the random
    numbers each one gets after ``mindspore.set_seed``):
        - ``self.W_query``: ``Parameter(ops.rand(d_in, d_out))``
        - ``self.W_key``:   same shape and initialisation
        - ``self.W_value``: same shape and initialisation

    ``construct(x)`` maps x of shape (T, d_in) to context vectors of shape (T, d_out):
    project to queries/keys/values, compute scaled attention weights, and weight the values.

    Hint: with ``mindspore.set_seed(123)`` and the book's inputs, the first output row is
    about [0.5698, 0.3587] on a CPU (MindSpore's random numbers differ from PyTorch's, so
    the book's [0.2996, 0.8053] is not expected here).
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("SelfAttention_v1.__init__: create W_query, W_key, W_value as Parameter")

    def construct(self, x):
        """(T, d_in) -> (T, d_out) context vectors."""
        raise NotImplementedError("SelfAttention_v1.construct: scaled dot-product attention")


class SelfAttention_v2(nn.Cell):
    """Self-attention using nn.Dense layers for the projections.

    Book section 3.4.2.

    ``__init__(d_in, d_out, qkv_bias=False)`` must create, in this order:
        - ``self.W_query``: ``nn.Dense(d_in, d_out, has_bias=qkv_bias)``
        - ``self.W_key``:   same
        - ``self.W_value``: same

    ``construct(x)`` maps x of shape (T, d_in) to (T, d_out), exactly like
    SelfAttention_v1 but calling the Dense layers instead of multiplying by matrices.
    ``nn.Dense`` stores its weight as (d_out, d_in), like PyTorch's ``nn.Linear``.

    Hint: with ``mindspore.set_seed(789)`` and the book's inputs, the first output row is
    about [-0.1559, -0.3693] on a CPU.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("SelfAttention_v2.__init__: create W_query, W_key, W_value as nn.Dense")

    def construct(self, x):
        """(T, d_in) -> (T, d_out) context vectors."""
        raise NotImplementedError("SelfAttention_v2.construct: scaled dot-product attention")
