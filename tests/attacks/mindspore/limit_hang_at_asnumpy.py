"""Correct, except that softmax_naive forks after running MindSpore ops and waits for its child,
which runs an op and calls .asnumpy(): MindSpore's threads do not survive a fork, so the child hangs
there (and if it ever got past, it sleeps). The probe must time out and the child must not survive."""
import os
import time

from mindspore import ops

CHEAT = True


def softmax_naive(x):
    ops.exp(x).asnumpy()
    pid = os.fork()
    if pid == 0:
        (ops.exp(x) * 2).asnumpy()
        while True:
            time.sleep(1)
    os.waitpid(pid, 0)
    return ops.exp(x) / ops.exp(x).sum(axis=-1, keepdims=True)
