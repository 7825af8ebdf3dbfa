"""Exercise 3.1 in a loop, copying the raw weights through .data."""


def transfer_weights(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).data.copy_(getattr(sa_v2, name).weight.data)  # <- the mistake
