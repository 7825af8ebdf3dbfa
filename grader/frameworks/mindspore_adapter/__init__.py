"""The MindSpore adapter: a student's MindSpore modules, presented to the probes in PyTorch terms.

`MindSporeNamespace(ns)` wraps the namespace a probe reads (the student's modules, or the MindSpore
reference). Functions get their torch tensors converted to `mindspore.Tensor` and their results
converted back; `nn.Cell` classes build the student's Cell and hand the probe a `CellFacade`, a
torch `nn.Module` look-alike in MindSpore terms:
- weights are copied in by parameter name through numpy (`transplant` writes the facade's torch
  mirror of a Parameter, the Cell gets the value before it runs); `nn.Dense.weight` is (out, in)
  like `nn.Linear.weight`, so the PyTorch probes' weights fit as they are;
- `eval()`/`train()` are `set_train(False/True)`; `to(torch.float64)` is `Cell.to(mindspore.float64)`;
- `named_parameters()`/`parameters()` are the trainable parameters (`trainable_params()`),
  `named_buffers()` the registered buffers and the non-trainable Parameters (the port's mask);
- gradients: `backward()` through a facade's output runs `mindspore.grad` on the Cell.

`prepare()` sets the process up once: CPU device, a small memory pool, and a submission's own
`set_context(device_target=...)`/`set_device(...)`/graph mode kept from taking effect (they would
raise on a CPU-only machine, or compile the code differently; the calls are recorded in NOTES).
"""

from __future__ import annotations

import types
from typing import Any

from grader.frameworks.mindspore_adapter.cells import CellFacade, ClassFacade, FunctionFacade
from grader.frameworks.mindspore_adapter.process import NOTES, prepare

__all__ = ["CellFacade", "MindSporeNamespace", "NOTES", "prepare"]


class ModuleFacade:
    """A student module whose Cell classes and functions take and return torch values."""

    def __init__(self, module: types.ModuleType):
        self._module = module
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._cache:
            import mindspore

            value = getattr(self._module, name)
            if isinstance(value, type) and issubclass(value, mindspore.nn.Cell):
                value = ClassFacade(value)
            elif callable(value) and not isinstance(value, type):
                value = FunctionFacade(value)
            self._cache[name] = value
        return self._cache[name]


class MindSporeNamespace:
    """The probes' namespace for MindSpore code: modules of `inner` behind facades."""

    def __init__(self, inner: Any):
        prepare()
        self.inner = inner
        self.directory = getattr(inner, "directory", "")
        self._modules: dict[str, ModuleFacade] = {}

    def module(self, name: str) -> Any:
        if name not in self._modules:
            self._modules[name] = ModuleFacade(self.inner.module(name))
        return self._modules[name]
