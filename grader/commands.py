"""Subcommands of `grade` other than grading itself (release, nbgrader, gradescope)."""
from __future__ import annotations

from typing import Callable

SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {}
