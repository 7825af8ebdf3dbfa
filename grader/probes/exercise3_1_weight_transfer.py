"""Probes of exercise3_1_weight_transfer: copy SelfAttention_v2's nn.Linear weights into SelfAttention_v1.

The probe builds both objects itself, as plain nn.Module shells carrying the contract's attributes
(three nn.Linear vs three (d_in, d_out) nn.Parameter), so that a broken 3.4 module costs nothing here.
d_in == d_out makes a missing transpose a wrong value rather than a shape error; d_in != d_out
is the book's situation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from grader.probes import attr, function, probe, randn, tensor

MODULE = "exercise3_1_weight_transfer"
NAMES = ("W_query", "W_key", "W_value")


class LinearShell(nn.Module):
    """What transfer_weights reads: SelfAttention_v2's three nn.Linear(d_in, d_out) layers."""

    def __init__(self, d_in: int, d_out: int, seed: int):
        super().__init__()
        for i, name in enumerate(NAMES):
            layer = nn.Linear(d_in, d_out, bias=False)
            with torch.no_grad():
                layer.weight.copy_(randn(d_out, d_in, seed=seed + i))
            setattr(self, name, layer)


class MatrixShell(nn.Module):
    """What transfer_weights writes: SelfAttention_v1's three (d_in, d_out) parameters."""

    def __init__(self, d_in: int, d_out: int, seed: int):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        for name in NAMES:
            setattr(self, name, nn.Parameter(torch.rand(d_in, d_out, generator=generator, dtype=torch.float32)))


# probe -> (d_in, d_out, seed)
SIZES = {"square": (4, 4, 301), "rectangular": (3, 2, 311)}  # d_in == d_out; the book's d_in = 3, d_out = 2


def before_transfer(probe_name: str) -> dict[str, torch.Tensor]:
    """The matrices sa_v1 holds before `transfer_weights` runs in probe `probe_name` (its `MatrixShell`)."""
    d_in, d_out, seed = SIZES[probe_name]
    shell = MatrixShell(d_in, d_out, seed + 7)
    return {name: attr(shell, name).detach().clone() for name in NAMES}


def transfer(ns, d_in: int, d_out: int, seed: int) -> dict:
    fn = function(ns, MODULE, "transfer_weights")
    sa_v2, sa_v1 = LinearShell(d_in, d_out, seed), MatrixShell(d_in, d_out, seed + 7)
    fn(sa_v2, sa_v1)
    out: dict[str, Any] = {name: tensor(attr(sa_v1, name), f"sa_v1.{name}") for name in NAMES}
    out["parameters"] = sorted([name, list(p.shape), bool(p.requires_grad)] for name, p in sa_v1.named_parameters())
    return out


@probe(MODULE)
def square(ns):
    d_in, d_out, seed = SIZES["square"]
    return transfer(ns, d_in, d_out, seed=seed)


@probe(MODULE)
def rectangular(ns):
    d_in, d_out, seed = SIZES["rectangular"]
    return transfer(ns, d_in, d_out, seed=seed)
