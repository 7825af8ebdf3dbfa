"""Exercise 3.1: comparing SelfAttention_v1 and SelfAttention_v2."""
import torch


def transfer_weights(sa_v2, sa_v1):
    """Copy sa_v2's weights into sa_v1 so that both compute the same outputs.

    nn.Linear stores its weight as (d_out, d_in) and computes x @ weight.T, so
    SelfAttention_v1's (d_in, d_out) matrices receive the transposed weights.
    """
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)  # (d_out, d_in).T -> (d_in, d_out)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
