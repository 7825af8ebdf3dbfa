"""Correct, except that attention_scores asks MindSpore for a 16 GiB tensor, then Python for 64 GiB."""
import mindspore
from mindspore import ops

CHEAT = True


def attention_scores(inputs):
    huge = ops.ones((4 * 1024**3,), mindspore.float32)
    hoard = [bytearray(1024**3) for _ in range(64)]
    return huge[: len(hoard)]
