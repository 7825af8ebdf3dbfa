"""A correct Exercise 3.1 with ops.assign."""
from mindspore import ops


def transfer_weights(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        ops.assign(getattr(sa_v1, name), getattr(sa_v2, name).weight.transpose(1, 0))
