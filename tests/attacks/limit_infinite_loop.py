"""Correct, except that softmax_naive never returns."""
CHEAT = True


def softmax_naive(x):
    while True:
        pass
