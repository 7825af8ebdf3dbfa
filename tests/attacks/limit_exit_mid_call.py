"""Correct, except that attention_weights ends the process (os._exit(0)) mid-call."""
import os

import torch

CHEAT = True


def attention_weights(inputs):
    os._exit(0)
