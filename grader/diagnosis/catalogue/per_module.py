"""Collecting a list that each student module's file in a package may define (VARIANTS, PATTERNS).

The files import the package's record (Variant, Pattern), so the package collects them when asked,
never when it is imported."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from grader.records import MODULES


def collect(package: str, attribute: str, also: Iterable[str] = ()) -> list[Any]:
    """`attribute` of every `<package>.<module>` in book order, then of the modules `also`; a
    student module without a file adds nothing."""
    items: list[Any] = []
    for module in (*MODULES, *also):
        try:
            items += getattr(importlib.import_module(f"{package}.{module}"), attribute)
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{module}" or module not in MODULES:
                raise
    return items
