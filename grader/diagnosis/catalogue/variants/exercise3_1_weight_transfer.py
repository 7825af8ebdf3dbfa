"""Buggy variants of exercise3_1_weight_transfer (Exercise 3.1)."""

from __future__ import annotations

import torch
import torch.nn as nn

from grader.diagnosis.catalogue.variants import Variant

MODULE = "exercise3_1_weight_transfer"


def _copy(pairs, transpose=True):
    def transfer_weights(sa_v2, sa_v1):
        with torch.no_grad():
            for source, target in pairs:
                weight = getattr(sa_v2, source).weight
                getattr(sa_v1, target).copy_(weight.T if transpose else weight)

    return transfer_weights


def _assign_untransposed(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        setattr(sa_v1, name, nn.Parameter(getattr(sa_v2, name).weight.detach().clone()))


SAME = [("W_query", "W_query"), ("W_key", "W_key"), ("W_value", "W_value")]

VARIANTS: list[Variant] = [
    Variant("weights-not-transposed", {MODULE: {"transfer_weights": _copy(SAME, transpose=False)}}),
    Variant("weights-not-transposed", {MODULE: {"transfer_weights": _assign_untransposed}}),
    Variant(
        "weights-swapped",
        {MODULE: {"transfer_weights": _copy([("W_query", "W_key"), ("W_key", "W_query"), ("W_value", "W_value")])}},
    ),
    Variant(
        "weights-swapped",
        {MODULE: {"transfer_weights": _copy([("W_query", "W_value"), ("W_key", "W_key"), ("W_value", "W_query")])}},
    ),
    Variant(
        "weights-swapped",
        {MODULE: {"transfer_weights": _copy([("W_query", "W_query"), ("W_key", "W_value"), ("W_value", "W_key")])}},
    ),
]
