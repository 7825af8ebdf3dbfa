"""Collecting a list that each student module's file in a package may define (VARIANTS, PATTERNS)."""

from __future__ import annotations

import importlib
from typing import Any

from grader.records import MODULES


def collect(package: str, attribute: str) -> list[Any]:
    """`attribute` of every `<package>.<module>` in book order; a module without a file adds nothing."""
    items: list[Any] = []
    for module in MODULES:
        try:
            items += getattr(importlib.import_module(f"{package}.{module}"), attribute)
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{module}":
                raise
    return items
