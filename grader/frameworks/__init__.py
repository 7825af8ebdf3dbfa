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
import unicodedata
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

_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+(mindspore)\b", re.M)
_ANY_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)


def imports_mindspore(source: str) -> bool:
    """Whether a module's source imports mindspore (any `import mindspore...`/`from mindspore...`)."""
    return "mindspore" in _imported(source, _IMPORT_LINE)


def _imported(source: str, fallback: re.Pattern) -> set[str]:
    """The top-level packages a module imports (absolute imports only)."""
    try:
        tree = ast.parse(source)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError; and CPython 3.11's
        # SystemError ("AST constructor recursion depth mismatch") when parsing from deep in a stack
        return {match.group(1) for match in fallback.finditer(source)}  # a broken module still shows it
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _may_name_mindspore(source: str) -> bool:
    """Whether the name can occur in the source's code (identifiers are NFKC-normalised by Python:
    `import ｍｉｎｄｓｐｏｒｅ` imports mindspore)."""
    return "mindspore" in (source if source.isascii() else unicodedata.normalize("NFKC", source))


def track_of(sources: Mapping[str, str]) -> str:
    """The track of a submission: MindSpore when more of its modules import mindspore than import
    torch without mindspore. A PyTorch submission with an `import mindspore` left over in one module
    stays on the PyTorch track; a port that also imports torch somewhere stays a port."""
    if not any(_may_name_mindspore(source) for source in sources.values()):
        return PYTORCH  # no module can import it (its imports are not even parsed)
    imported = [_imported(source, _ANY_IMPORT_LINE) for source in sources.values()]
    mindspore = sum("mindspore" in names for names in imported)
    torch_only = sum("torch" in names and "mindspore" not in names for names in imported)
    return MINDSPORE if mindspore > torch_only else PYTORCH


def namespace_for(track: str, ns: Any) -> Any:
    """The namespace the probes should see for code of `track` found in `ns`."""
    if track == MINDSPORE:
        from grader.frameworks.mindspore_adapter import MindSporeNamespace

        return MindSporeNamespace(ns)
    return ns
