"""Exercise 3.1: comparing SelfAttention_v1 and SelfAttention_v2 (MindSpore).

练习 3.1：比较 SelfAttention_v1 与 SelfAttention_v2。

Replace the ``raise NotImplementedError(...)`` with your implementation.
"""
import mindspore  # noqa: F401


def transfer_weights(sa_v2, sa_v1):
    """Make ``sa_v1`` compute exactly what ``sa_v2`` computes.

    Exercise 3.1 (book section 3.4.2). Copy the weights of a SelfAttention_v2 into a
    SelfAttention_v1 of the same d_in and d_out, query to query, key to key and value to
    value, so that ``sa_v1(x)`` equals ``sa_v2(x)`` for any (T, d_in) input.

    Args:
        sa_v2: a SelfAttention_v2 (nn.Dense layers ``W_query``, ``W_key``, ``W_value``).
        sa_v1: a SelfAttention_v1 (Parameter matrices of shape (d_in, d_out)), changed in
            place.

    Returns:
        None.

    Hint: nn.Dense stores its weight with shape (d_out, d_in) and computes
    ``x @ weight.T``. Write into a Parameter with ``param.set_data(tensor)``; it stays a
    trainable Parameter.
    """
    raise NotImplementedError("transfer_weights: copy sa_v2's (transposed) weights into sa_v1")
