"""Correct Exercise 3.1: copy into the existing parameters' data, name by name."""


def transfer_weights(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).data.copy_(getattr(sa_v2, name).weight.data.t())
