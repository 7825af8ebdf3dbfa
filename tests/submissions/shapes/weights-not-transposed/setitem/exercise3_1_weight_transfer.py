"""Exercise 3.1 assigning into the matrices by slicing."""
import torch


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query[:] = sa_v2.W_query.weight  # <- the mistake
        sa_v1.W_key[:] = sa_v2.W_key.weight  # <- the mistake
        sa_v1.W_value[:] = sa_v2.W_value.weight  # <- the mistake
