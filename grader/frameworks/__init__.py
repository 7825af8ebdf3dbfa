"""Framework adapters: the same probes, run against code written for another framework.

A submission is on the PyTorch track (the default) or on the MindSpore track when its modules
import mindspore (exercise-api.md §4). Probes are written once, in PyTorch terms; for the
MindSpore track `mindspore_adapter` presents the student's MindSpore code to them as PyTorch-like
objects (Cells built and called in MindSpore, results handed back as plain torch tensors), so the
same probes, codec and hidden suites grade both tracks.

This package is copied into the sandbox: it imports only the standard library here, and torch and
mindspore in `mindspore_adapter` (imported only for the MindSpore track).
"""
from __future__ import annotations

import ast
import re
from typing import Any, Mapping

PYTORCH = "pytorch"
MINDSPORE = "mindspore"
TRACKS = (PYTORCH, MINDSPORE)

# Probes whose outputs come from the framework's own random stream (the book's seeded runs): on
# the MindSpore track they are compared with the MindSpore reference's outputs (the CPU values of
# exercise-api.md §4), every other probe with the PyTorch reference's.
SEEDED_PROBES = frozenset({
    "sec3_4_self_attention:v1_book_seed",
    "sec3_5_causal_attention:book_seed",
    "sec3_6_multi_head_attention:mha_book_seeded",
    "exercise3_2_two_dim_output:seeded_output",
})

_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+mindspore\b", re.M)


def imports_mindspore(source: str) -> bool:
    """Whether a module's source imports mindspore (any `import mindspore...`/`from mindspore...`)."""
    try:
        tree = ast.parse(source)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError; and CPython 3.11's
        # SystemError ("AST constructor recursion depth mismatch") when parsing from deep in a stack
        return bool(_IMPORT_LINE.search(source))  # a broken module still shows its track
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mindspore" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "mindspore":
            return True
    return False


def track_of(sources: Mapping[str, str]) -> str:
    """The track of a submission: MindSpore when any of its modules imports mindspore."""
    return MINDSPORE if any(imports_mindspore(source) for source in sources.values()) else PYTORCH


def namespace_for(track: str, ns: Any) -> Any:
    """The namespace the probes should see for code of `track` found in `ns`."""
    if track == MINDSPORE:
        from grader.frameworks.mindspore_adapter import MindSporeNamespace

        return MindSporeNamespace(ns)
    return ns
