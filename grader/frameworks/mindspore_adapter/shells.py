"""Plain torch modules handed to student functions (Exercise 3.1's SelfAttention_v2 and v1
look-alikes) as MindSpore Cells, and the Cells' values written back into them afterwards.

Knows nothing of the facades (`cells`), which use it: which arguments are plain torch modules is
theirs to decide."""

from __future__ import annotations

from typing import Any

import torch

from grader.frameworks.mindspore_adapter.convert import ms_tensor, torch_tensor


class ShellCopies:
    """The Cells made for one call of a student function, each with the torch module it copies."""

    def __init__(self) -> None:
        self.copies: list[tuple[torch.nn.Module, Any, list[str]]] = []

    def shell(self, module: torch.nn.Module) -> Any:
        """A Cell copy of `module` (see `_shell`), written back into it by `write_back`."""
        cell, names = _shell(module)
        self.copies.append((module, cell, names))
        return cell

    def write_back(self) -> None:
        """The Cells' direct Parameters (or whatever the function put in their place) back into
        the torch modules: a Parameter stays a parameter, a plain Tensor becomes a plain tensor."""
        import mindspore

        for module, cell, names in self.copies:
            for name in names:
                value = getattr(cell, name, None)
                if name in module._parameters:
                    del module._parameters[name]
                if isinstance(value, mindspore.Parameter):
                    module.register_parameter(
                        name, torch.nn.Parameter(torch_tensor(value), requires_grad=bool(value.requires_grad))
                    )
                elif isinstance(value, mindspore.Tensor):
                    setattr(module, name, torch_tensor(value))
                else:
                    setattr(module, name, value)


def _shell(module: torch.nn.Module) -> tuple[Any, list[str]]:
    """A Cell with the module's nn.Linear children as nn.Dense and its own parameters."""
    import mindspore

    cell = mindspore.nn.Cell()
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            dense = mindspore.nn.Dense(
                child.in_features,
                child.out_features,
                has_bias=child.bias is not None,
                weight_init=ms_tensor(child.weight),
                bias_init=ms_tensor(child.bias) if child.bias is not None else "zeros",
            )
            setattr(cell, name, dense)
    names = []
    for name, parameter in module.named_parameters(recurse=False):
        setattr(
            cell,
            name,
            mindspore.Parameter(ms_tensor(parameter), name=name, requires_grad=bool(parameter.requires_grad)),
        )
        names.append(name)
    return cell, names
