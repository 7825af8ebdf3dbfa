# BUGGY on purpose: assigns the untransposed nn.Linear weights as new parameters.
"""Exercise 3.1: comparing SelfAttention_v1 and SelfAttention_v2."""
import torch


def transfer_weights(sa_v2, sa_v1):
    """Copy sa_v2's weights into sa_v1 so that both compute the same outputs.

    nn.Linear stores its weight as (d_out, d_in) and computes x @ weight.T, so
    SelfAttention_v1's (d_in, d_out) matrices receive the transposed weights.
    """
    sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight)
    sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight)
    sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight)
