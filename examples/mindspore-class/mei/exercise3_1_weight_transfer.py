"""Exercise 3.1 (MindSpore)."""


def transfer_weights(sa_v2, sa_v1):
    sa_v1.W_query.set_data(sa_v2.W_query.weight)  # forgot that nn.Dense stores (d_out, d_in)
    sa_v1.W_key.set_data(sa_v2.W_key.weight)
    sa_v1.W_value.set_data(sa_v2.W_value.weight)
