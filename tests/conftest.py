"""Shared fixtures for the kit's own tests."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = [
    "sec3_3_simple_attention",
    "sec3_4_self_attention",
    "sec3_5_causal_attention",
    "sec3_6_multi_head_attention",
    "exercise3_1_weight_transfer",
    "exercise3_2_two_dim_output",
    "exercise3_3_gpt2_attention",
]


def solutions_as_submission(target: Path) -> Path:
    """The reference solutions rewritten as a student would hand them in (sibling imports)."""
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        source = (ROOT / "solutions" / f"{module}.py").read_text()
        (target / f"{module}.py").write_text(re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M))
    return target


def mindspore_solutions_as_submission(target: Path) -> Path:
    """The MindSpore reference (solutions/mindspore) as a student of that track would hand it in."""
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        source = (ROOT / "solutions" / "mindspore" / f"{module}.py").read_text()
        (target / f"{module}.py").write_text(re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M))
    return target


def stubs_as_submission(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        shutil.copy(ROOT / "exercises" / f"{module}.py", target / f"{module}.py")
    return target


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
