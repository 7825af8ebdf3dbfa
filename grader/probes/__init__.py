"""Probes: small, fixed experiments on one student module that return named outputs.

A probe is the only code that touches a student's module. It runs inside the sandbox against
the student's code, and in the trusted grader against the reference solutions and the known-buggy
variants, always on the same inputs and transplanted weights, so the outputs can be compared.
Probes hold no expected values and no verdicts: those live in the hidden suites.

This package must import nothing but the standard library and torch: it is copied into the sandbox.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from grader.sections import MODULES


class Namespace(Protocol):
    """Where a probe finds the code under test (the student's, the reference's or a variant's)."""

    def module(self, name: str) -> Any: ...


class ContractError(Exception):
    """The code under test does not follow the exercise API (missing attribute, wrong type or shape).

    Carries a message-catalogue key and parameters instead of English text.
    """

    def __init__(self, key: str, **params: Any):
        super().__init__(key)
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Probe:
    name: str  # "<module>:<function>"
    module: str
    fn: Callable[[Namespace], dict]


PROBES: dict[str, Probe] = {}

PROBE_MODULES = MODULES  # grader/sections.py


def probe(module: str) -> Callable[[Callable[[Namespace], dict]], Callable[[Namespace], dict]]:
    """Register a probe of `module`; its name is "<module>:<function name>"."""

    def register(fn: Callable[[Namespace], dict]) -> Callable[[Namespace], dict]:
        name = f"{module}:{fn.__name__}"
        if name in PROBES:
            raise RuntimeError(f"duplicate probe {name}")
        PROBES[name] = Probe(name, module, fn)
        return fn

    return register


def load_all() -> dict[str, Probe]:
    """Import every probe module so that the registry is complete."""
    for module in PROBE_MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return PROBES


# ---------------------------------------------------------------------------------------------
# Helpers for writing probes
# ---------------------------------------------------------------------------------------------

# The book's running example: "Your journey starts with one step", one 3-d embedding per token.
BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
BOOK_INPUTS = [
    [0.43, 0.15, 0.89],  # Your     (x^1)
    [0.55, 0.87, 0.66],  # journey  (x^2)
    [0.57, 0.85, 0.64],  # starts   (x^3)
    [0.22, 0.58, 0.33],  # with     (x^4)
    [0.77, 0.25, 0.10],  # one      (x^5)
    [0.05, 0.80, 0.55],  # step     (x^6)
]


def book_inputs() -> torch.Tensor:
    return torch.tensor(BOOK_INPUTS, dtype=torch.float32)  # whatever default dtype the student set


# Other frameworks' seeding, run by cpu_manual_seed too (the MindSpore adapter adds mindspore.set_seed).
SEEDERS: list[Callable[[int], None]] = []


def cpu_manual_seed(seed: int) -> None:
    """torch.manual_seed(seed) as the book runs it, on the CPU: the same generator state, without
    the lazy CUDA seeding bookkeeping torch.manual_seed also does (it formats a stack trace each
    call, about 0.7 ms in a freshly forked sandbox child)."""
    torch.default_generator.manual_seed(seed)
    for seeder in SEEDERS:
        seeder(seed)


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Deterministic random inputs, independent of the global RNG."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=dtype)


def rand(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=generator, dtype=dtype)


def attr(obj: Any, path: str) -> Any:
    """Follow a dotted attribute path; a missing attribute is a contract error that says whose
    attribute is missing (a Python module's, or an nn.Module object's)."""
    owner, found = obj, ""
    for part in path.split("."):
        if part.isdigit() and hasattr(obj, "__getitem__"):
            try:
                obj = obj[int(part)]
                found = f"{found}.{part}".lstrip(".")
                continue
            except (IndexError, KeyError, TypeError):
                raise _missing(owner, path, found, obj, part) from None
        if not hasattr(obj, part):
            raise _missing(owner, path, found, obj, part)
        obj = getattr(obj, part)
        found = f"{found}.{part}".lstrip(".")
    return obj


def _missing(owner: Any, path: str, found: str, where: Any, part: str) -> ContractError:
    """The contract error for attribute `path` of `owner`, of which `found` (the object `where`) was
    there but not its `part`."""
    if isinstance(owner, types.ModuleType):
        return ContractError("contract.missing-module-attribute", module=owner.__name__.rpartition(".")[2], path=path)
    if isinstance(owner, torch.nn.Module):
        name = type(owner).__name__
        if found:
            return ContractError(
                "contract.missing-object-attribute-of",
                name=name,
                path=path,
                what=found,
                got=type(where).__name__,
                expected=part,
            )
        return ContractError("contract.missing-object-attribute", name=name, path=path)
    return ContractError("contract.missing-attribute", path=path)


def function(ns: Namespace, module: str, name: str) -> Callable:
    fn = getattr(ns.module(module), name, None)
    if not callable(fn):
        raise ContractError("contract.missing-function", module=module, name=name)
    return fn


def tensor(value: Any, what: str) -> torch.Tensor:
    """A plain tensor copy of a value the student returned, or a contract error."""
    if not isinstance(value, torch.Tensor):
        raise ContractError("contract.not-a-tensor", what=what, got=type(value).__name__)
    return value.detach().clone()


def transplant(module: torch.nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Copy known weights into the student's module by the contract's attribute names."""
    for path, value in weights.items():
        target = attr(module, path)
        if not isinstance(target, torch.Tensor):
            raise ContractError("contract.not-a-tensor", what=path, got=type(target).__name__)
        if tuple(target.shape) != tuple(value.shape):
            raise ContractError("contract.wrong-shape", what=path, expected=list(value.shape), got=list(target.shape))
        with torch.no_grad():
            target.copy_(value.to(target.dtype))


@contextmanager
def linear_layers_zero_filled():
    """nn.Linear layers built inside start all-zero instead of randomly initialised.

    For probes that overwrite every weight they use (or read only sizes): a random init of a large
    layer is the slowest part of building it, and its values never reach the probe's outputs.
    """
    reset_parameters = torch.nn.Linear.reset_parameters

    def zero_fill(self: torch.nn.Linear) -> None:
        with torch.no_grad():
            for parameter in (self.weight, self.bias):
                if parameter is not None:
                    parameter.zero_()

    zero_fill.zero_filled = True  # type: ignore[attr-defined]  # framework adapters do the same (nn.Dense)
    torch.nn.Linear.reset_parameters = zero_fill  # type: ignore[method-assign]  # patched on purpose, for the block
    try:
        yield
    finally:
        torch.nn.Linear.reset_parameters = reset_parameters  # type: ignore[method-assign]


def linear_weights(prefix: str, d_in: int, d_out: int, *, bias: bool, seed: int) -> dict[str, torch.Tensor]:
    """Weights for an nn.Linear(d_in, d_out) called `prefix` (weight is stored as (d_out, d_in))."""
    weights = {f"{prefix}.weight": randn(d_out, d_in, seed=seed) / d_in**0.5}
    if bias:
        weights[f"{prefix}.bias"] = randn(d_out, seed=seed + 1) * 0.1
    return weights


def qkv_weights(d_in: int, d_out: int, *, bias: bool = False, seed: int, prefix: str = "") -> dict[str, torch.Tensor]:
    weights: dict[str, torch.Tensor] = {}
    for offset, name in enumerate(("W_query", "W_key", "W_value")):
        weights |= linear_weights(prefix + name, d_in, d_out, bias=bias, seed=seed + 10 * offset)
    return weights


def parameter_names(module: torch.nn.Module) -> list[str]:
    return [name for name, _ in module.named_parameters()]
