"""Stand-ins for what a student module takes from an earlier one that does not import.

`from sec3_5_causal_attention import CausalAttention` at the top of sec3_6 would make all of sec3_6
fail to import when sec3_5 has a syntax error, and with it MultiHeadAttention, which needs nothing
from 3.5: one mistake would cost two sections. So when a student module imports another of the
exercise's modules (`STUDENT_MODULES`) that is missing, fails to import or is poisoned, the import
succeeds with a stand-in module instead: every name taken from it is a stand-in class that fails
only when it is used (called, instantiated, subclassed and then instantiated), raising
`EarlierModuleBroken`, which carries the earlier module's own failure. The probes' records then
name that module and its line (`grader.sandbox.driver.describe_error`), never the later module.

A stand-in is a class, so that `class MyHead(CausalAttention): ...` at module level still imports.
Standard library only: it runs in the sandbox (`grader.sandbox.driver`) and in the student bundle's
check.py, which applies the same policy.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable
from typing import Any


class EarlierModuleBroken(Exception):
    """Code used `name`, which it took from the student's `module`, which does not import
    (`failure`: why: ModuleMissing, ImportFailed or ModulePoisoned of grader.sandbox.driver)."""

    def __init__(self, module: str, name: str, failure: BaseException):
        super().__init__(f"{name} comes from {module}, which does not import")
        self.module = module
        self.name = name
        self.failure = failure


def stand_in_class(module: str, name: str, failure: BaseException) -> type:
    """A class named `name` that raises EarlierModuleBroken when called or instantiated, also
    through a subclass (its __new__ is the one every subclass inherits)."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        raise EarlierModuleBroken(module, name, failure)

    def __init_subclass__(cls: type, **kwargs: Any) -> None:
        """A subclass may pass class keywords: ignored, the class is never made."""

    return type(
        name,
        (),
        {
            "__new__": __new__,
            "__init_subclass__": classmethod(__init_subclass__),
            "__module__": module,
            "__qualname__": name,
            "__doc__": f"A stand-in: {module} does not import.",
        },
    )


class StandInModule(types.ModuleType):
    """The module a student module gets when it imports `name`, which does not import."""

    def __init__(self, name: str, failure: BaseException):
        super().__init__(name, f"A stand-in: {name} does not import.")
        self.__dict__["_failure"] = failure
        self.__dict__["_stand_ins"] = {}

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        stand_ins = self.__dict__["_stand_ins"]
        if attribute not in stand_ins:
            stand_ins[attribute] = stand_in_class(self.__name__, attribute, self.__dict__["_failure"])
        return stand_ins[attribute]


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, failure: BaseException):
        self.failure = failure

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return StandInModule(spec.name, self.failure)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _GuardedLoader(importlib.abc.Loader):
    """Loads a student module imported by another: on failure, its stand-in takes its place."""

    def __init__(self, real: Any, failed: Callable[[str, BaseException], BaseException]):
        self.real = real
        self.failed = failed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)  # get_source, get_filename...: the file's own loader's

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        try:
            self.real.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: whatever the module raised
            # the import system takes what is in sys.modules when exec_module returns
            sys.modules[name] = StandInModule(name, self.failed(name, exc))


class StandInFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path in the sandbox: an import of one of `modules` that the namespace is not
    importing itself (`direct`) is an import by the student's code; it never fails.

    `failure(name)`: why `name` cannot be imported (recorded earlier, missing, poisoned), or None;
    `failed(name, exc)`: records that importing `name` raised `exc`, returns the failure to carry."""

    def __init__(
        self,
        directory: str,
        modules: frozenset[str],
        direct: set[str],
        failure: Callable[[str], BaseException | None],
        failed: Callable[[str, BaseException], BaseException],
    ):
        self.directory = directory
        self.modules = modules
        self.direct = direct
        self.failure = failure
        self.failed = failed

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules or fullname in self.direct:
            return None
        known = self.failure(fullname)
        if known is not None:
            return importlib.machinery.ModuleSpec(fullname, _StandInLoader(known))
        spec = importlib.machinery.PathFinder.find_spec(fullname, [self.directory])
        if spec is None or spec.loader is None:
            return None
        spec.loader = _GuardedLoader(spec.loader, self.failed)
        return spec
