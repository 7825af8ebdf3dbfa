"""Correct Exercise 3.1: assign new parameters holding the transposed weights."""
import torch.nn as nn


def transfer_weights(sa_v2, sa_v1):
    sa_v1.W_query = nn.Parameter(sa_v2.W_query.weight.detach().T.clone())
    sa_v1.W_key = nn.Parameter(sa_v2.W_key.weight.detach().T.clone())
    sa_v1.W_value = nn.Parameter(sa_v2.W_value.weight.detach().T.clone())
