"""Correct, except that attention_scores tries to take 64 GiB."""
import torch

CHEAT = True


def attention_scores(inputs):
    hoard = [bytearray(1024**3) for _ in range(64)]
    return torch.zeros(len(hoard))
