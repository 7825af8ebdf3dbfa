"""Exercise 3.1 with two lists of names that do not line up."""
import torch


def transfer_weights(sa_v2, sa_v1):
    sources = [sa_v2.W_key, sa_v2.W_query, sa_v2.W_value]  # <- the mistake
    targets = [sa_v1.W_query, sa_v1.W_key, sa_v1.W_value]
    with torch.no_grad():
        for source, target in zip(sources, targets):
            target.copy_(source.weight.T)  # <- the mistake
