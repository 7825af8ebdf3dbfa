"""check_expected.json: what the public value checks compare with (templates/release/ch3_check_values.py).

Made in the trusted kit whenever a bundle or an nbgrader course is written: each value probe of
the public check list (fixed inputs, known weights) runs on the reference solutions and on every
known-buggy variant of its module (grader.diagnosis.catalogue.variants). Per probe the document holds the
reference's output, each variant's output that differs from it (or the error it raises) under the
variant's misconception id, and the reference's intermediate values at its declared checkpoints
(`[checkpoint: ...]` in solutions/, read from a trace of the same run). These are values of
public inputs only: neither the reference's code nor any hidden probe or suite. Before the document
is returned, the reference must pass every public check with it (a kit bug otherwise).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from grader import sections
from grader.i18n import TEMPLATES_DIR

RELEASE = TEMPLATES_DIR / "release"
SECTIONS_MODULE = "ch3_check_sections"
PUBLIC_MODULES = (
    "ch3_check_tools",
    "ch3_check_list",
    "ch3_check_values",
    "ch3_check_trace",
    "ch3_check_diagnosis",
    "ch3_checks",
)
SOLUTIONS = Path(str(importlib.import_module("solutions").__file__)).resolve().parent


class PublicChecksBroken(RuntimeError):
    """The reference fails one of the public checks: a bug in the kit, never a student's."""


class _Reference:
    """The reference (or a variant of it) as the public checks see a student's code: `m.Name`, and
    `m._sibling(module)` for another module."""

    def __init__(self, ns: Any, module: str):
        self._ns, self._name = ns, module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ns.module(self._name), name)

    def _sibling(self, module: str) -> _Reference:
        return _Reference(self._ns, module)


@contextlib.contextmanager
def public_checks() -> Iterator[dict[str, ModuleType]]:
    """The public check modules of templates/release/, imported as students import them, then forgotten."""
    names = (SECTIONS_MODULE, *PUBLIC_MODULES)
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    sys.modules[SECTIONS_MODULE] = sections  # what a bundle ships as ch3_check_sections.py
    sys.path.insert(0, str(RELEASE))
    try:
        yield {name: importlib.import_module(name) for name in PUBLIC_MODULES}
    finally:
        sys.path.remove(str(RELEASE))
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def _plain(value: Any) -> Any:
    """A tensor as nested lists of floats (JSON keeps NaN and the infinities as Python writes them)."""
    return value.detach().double().tolist()


def _run(fn: Any, m: _Reference, modules: dict[str, ModuleType]) -> Any:
    import torch

    with modules["ch3_check_list"].seeded(torch):
        return fn(m, torch)


def _checkpoints(fn: Any, m: _Reference, modules: dict[str, ModuleType]) -> list[list[Any]]:
    """The reference's declared intermediate values on this probe, in the order it computes them."""
    import torch

    from grader.diagnosis.walk.checkpoints import declarations

    def own(filename: str) -> bool:
        return Path(filename).resolve().parent == SOLUTIONS

    with modules["ch3_check_list"].seeded(torch):
        _, trace = modules["ch3_check_trace"].traced(lambda: fn(m, torch), own)
    declared = declarations()
    found = []
    for index, op in enumerate(trace.ops):
        names = declared.get((Path(op.place[0]).name, op.place[1]), {})
        following = trace.ops[index + 1] if index + 1 < len(trace.ops) else None
        last_of_line = following is None or following.place != op.place
        name = names.get(op.name) or (names.get("") if last_of_line else None)
        if name and op.value is not None:
            found.append([name, _plain(op.value)])
    return found


def _outcome(fn: Any, m: _Reference, modules: dict[str, ModuleType]) -> Any:
    """A probe's output as JSON, or {"error": "Type: message"} when it raises."""
    import torch

    try:
        out = _run(fn, m, modules)
    except Exception as exc:  # noqa: BLE001 - a variant may break: its error is its signature
        return {"error": modules["ch3_checks"].one_line(exc)}
    return _plain(out) if isinstance(out, torch.Tensor) else {"error": f"not a tensor: {type(out).__name__}"}


def _differs(outcome: Any, expected: list) -> bool:
    import torch

    if isinstance(outcome, dict):
        return True
    a, b = torch.tensor(outcome, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64)
    return a.shape != b.shape or not bool(torch.allclose(a, b, atol=1e-4, rtol=1e-3, equal_nan=True))


def expected_document() -> dict:
    """check_expected.json's document (see the module's docstring)."""
    from grader.diagnosis.catalogue.variants import all_variants
    from grader.reference_code import ModuleNamespace

    reference = ModuleNamespace("solutions")
    variants = all_variants()
    with public_checks() as modules:
        values = modules["ch3_check_values"]
        module_of = {key: module for module, key, _, _ in modules["ch3_check_list"].CHECKS}
        probes = {}
        for key, fn in values.PROBES.items():
            module = module_of[key]
            m = _Reference(reference, module)
            expected = _outcome(fn, m, modules)
            if isinstance(expected, dict):
                raise PublicChecksBroken(f"the reference fails the public probe {key}: {expected['error']}")
            causes = []
            for variant in variants:
                if module in variant.modules:
                    outcome = _outcome(fn, _Reference(ModuleNamespace("solutions", variant.overrides), module), modules)
                    if _differs(outcome, expected):
                        causes.append([variant.id, outcome])
            checkpoints = _checkpoints(fn, m, modules)
            probes[key] = {"expected": expected, "causes": causes, "checkpoints": checkpoints}
            if key in values.SEEDED:
                probes[key]["seeded"] = True
                if values.SEEDED[key]:
                    probes[key]["twin"] = values.SEEDED[key]
        document = {"probes": probes}
        _self_test(document, modules, reference)
    return document


def _self_test(document: dict, modules: dict[str, ModuleType], reference: Any) -> None:
    """Every public check passes on the reference, with these expected values."""
    import torch

    values = modules["ch3_check_values"]
    values.use_expected(document["probes"])  # what the checks read, before it is a file
    failed = []
    for module, key, fn, _ in modules["ch3_check_list"].CHECKS:
        try:
            with modules["ch3_check_list"].seeded(torch):
                fn(_Reference(reference, module), torch)
        except Exception as exc:  # noqa: BLE001 - every failure is listed
            failed.append(f"{key}: {type(exc).__name__}: {exc}")
    if failed:
        raise PublicChecksBroken("the reference fails public checks: " + "; ".join(failed))
