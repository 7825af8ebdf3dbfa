"""The kit's own code run in this process: the reference solutions and their buggy variants, through
the same probes and the same boundary as a student's code in the sandbox (never a student's code)."""

from __future__ import annotations

import importlib
import types
from collections.abc import Mapping
from typing import Any

from grader.probe_outputs import ProbeResults
from grader.probes import PROBES, load_all
from grader.sandbox import driver
from grader.sandbox.boundary import result_from_record


class ModuleNamespace:
    """Modules imported from a package (the reference solutions), with optional overrides (variants)."""

    def __init__(self, package: str = "solutions", overrides: Mapping[str, Mapping[str, Any]] | None = None):
        self.package = package
        self.overrides = overrides or {}
        self._modules: dict[str, Any] = {}

    def module(self, name: str) -> Any:
        if name not in self._modules:
            base = importlib.import_module(f"{self.package}.{name}")
            if name in self.overrides:
                patched = types.ModuleType(name)
                patched.__dict__.update(base.__dict__)
                patched.__dict__.update(self.overrides[name])
                base = patched
            self._modules[name] = base
        return self._modules[name]


def run_in_process(ns: Any, directory: str = "", probes: list[str] | None = None) -> ProbeResults:
    """Run probes in this process and convert their results to trusted-side records."""
    load_all()
    names = probes if probes is not None else sorted(PROBES)
    results: ProbeResults = {}
    for name, result in driver.run_probes([PROBES[n] for n in names], ns, directory).items():
        results[name] = result_from_record(result)
    return results
