"""Exercise 3.1 copying the value weights into the key matrix and back."""
import torch


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.t())
        sa_v1.W_key.copy_(sa_v2.W_value.weight.t())  # <- the mistake
        sa_v1.W_value.copy_(sa_v2.W_key.weight.t())  # <- the mistake
