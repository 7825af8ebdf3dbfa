"""Buggy variants for mistakes both tracks can make, first met on the MindSpore track.

`mask-trainable`: the causal mask kept as a trainable parameter (MindSpore: `Parameter(mask)`
without requires_grad=False; PyTorch: `nn.Parameter(mask)`): it is counted among the trainable
parameters (`trainable_params()` / `parameters()`), saved, and an optimizer would change it.
"""

from __future__ import annotations

import torch.nn as nn

from grader.diagnosis.catalogue.variants import Variant
from solutions.sec3_5_causal_attention import CausalAttention
from solutions.sec3_6_multi_head_attention import MultiHeadAttention


def _mask_as_parameter(module: nn.Module) -> None:
    mask = module._buffers.pop("mask")
    assert mask is not None  # the reference registers its mask as a tensor
    module.mask = nn.Parameter(mask)


class TrainableMaskCausalAttention(CausalAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _mask_as_parameter(self)


class TrainableMaskMultiHeadAttention(MultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _mask_as_parameter(self)


VARIANTS: list[Variant] = [
    Variant("mask-trainable", {"sec3_5_causal_attention": {"CausalAttention": TrainableMaskCausalAttention}}),
    Variant("mask-trainable", {"sec3_6_multi_head_attention": {"MultiHeadAttention": TrainableMaskMultiHeadAttention}}),
]
