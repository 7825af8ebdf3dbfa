"""Correct, except that attention_scores returns 64 MB of numbers."""
import torch

CHEAT = True


def attention_scores(inputs):
    return torch.zeros(4096, 4096)
