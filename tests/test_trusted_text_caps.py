"""Hostile text against the trusted side, its caps: what a submission's text
costs the grader's own process is bounded by caps that do not grow with what the student wrote.

- The near-miss search compares at most MAX_COMPARED_NAMES distinct names of a module, and as many
  of the notebooks' other definitions, with the contract's names; past that, a note names the file.
- A notebook is read up to MAX_READ_TOTAL characters of code: a cell past it contributes no names
  and no code, and a note lists it.
- The bounded edit distance stops as soon as no edit count under its limit can be reached, and
  gives what the full computation gives.

Structural, never timed: what was compared is counted, not how long it took
(`benchmarks/trusted_text.py` measures the time).
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from grader.i18n import Catalog
from grader.intake import near_misses as near_misses_module
from grader.intake.chapter import MAX_READ_TOTAL
from grader.intake.contract import ALL_NAMES
from grader.intake.near_misses import MAX_COMPARED_NAMES, distance
from grader.intake.submission import submission_from_files

M35 = "sec3_5_causal_attention"


def notebook(*cells: str) -> bytes:
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": []} for c in cells],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ).encode()


def filler(count: int, per_cell: int = 500) -> list[str]:
    """Cells defining `count` distinct functions whose names are as long as the contract's."""
    return [
        "".join(f"def SelfAttention{i:07d}(x):\n    return x\n" for i in range(start, min(count, start + per_cell)))
        for start in range(0, count, per_cell)
    ]


def grade_read(data: bytes, name: str = "ch3.ipynb"):
    return submission_from_files("student", Path("student"), {name: data})


def test_the_near_miss_search_compares_at_most_the_cap_whatever_the_notebook_defines(monkeypatch):
    compared: set[str] = set()
    original = near_misses_module.closeness

    def counting(wanted: str, found: str) -> int | None:
        compared.add(found)
        return original(wanted, found)

    monkeypatch.setattr(near_misses_module, "closeness", counting)
    submission = grade_read(notebook(*filler(8 * MAX_COMPARED_NAMES)))
    assert len(compared) <= MAX_COMPARED_NAMES
    assert [n.detail for n in submission.problems if n.kind == "submission.names-not-compared"] == ["ch3.ipynb"]


def test_a_misspelling_within_the_cap_is_still_named_and_none_past_it_is_claimed():
    early = notebook("class CausalAttenton:\n    pass\n", *filler(4 * MAX_COMPARED_NAMES))
    late = notebook(*filler(4 * MAX_COMPARED_NAMES), "class CausalAttenton:\n    pass\n")
    assert [m.found for m in grade_read(early).intake.near_misses] == ["CausalAttenton"]
    assert grade_read(late).intake.near_misses == ()


def test_a_notebook_under_the_cap_gets_no_note():
    submission = grade_read(notebook("class CausalAttenton:\n    pass\n", *filler(MAX_COMPARED_NAMES // 2)))
    assert not [n for n in submission.problems if n.kind == "submission.names-not-compared"]


def test_a_cell_past_the_reading_budget_contributes_no_names_and_is_noted():
    padding = "# " + "x" * (MAX_READ_TOTAL // 4) + "\n"
    cells = ["import torch\n"] + [padding] * 4 + ["class CausalAttention(torch.nn.Module):\n    pass\n"]
    submission = grade_read(notebook(*cells))
    assert M35 not in submission.sources
    notes = [n.detail for n in submission.problems if n.kind == "submission.notebook-cells-not-read"]
    assert notes == ["ch3.ipynb (5, 6)"]
    for lang in ("en", "zh"):
        text = Catalog(lang).t("integrity.submission.notebook-cells-not-read", detail=notes[0])
        assert "ch3.ipynb (5, 6)" in text and "1 MB" in text


def test_the_same_cell_within_the_budget_is_read():
    cells = ["import torch\n", "# short\n", "class CausalAttention(torch.nn.Module):\n    pass\n"]
    submission = grade_read(notebook(*cells))
    assert M35 in submission.sources
    assert not [n for n in submission.problems if n.kind == "submission.notebook-cells-not-read"]


def test_both_notes_have_en_and_zh_texts():
    for lang in ("en", "zh"):
        for kind in ("names-not-compared", "notebook-cells-not-read"):
            text = Catalog(lang).t(f"integrity.submission.{kind}", detail="ch3.ipynb")
            assert "ch3.ipynb" in text and "{" not in text


def _full_distance(a: str, b: str, limit: int) -> int:
    """The edit distance with swaps, computed in full (no early stop)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return min(rows[-1][len(b)], limit + 1)


names = st.text(alphabet="aAbcdeinostv_12", max_size=14)


@given(names, st.sampled_from(sorted(ALL_NAMES)), st.integers(0, 3))
def test_the_bounded_distance_is_the_full_one(found, wanted, limit):
    if abs(len(found) - len(wanted)) <= limit:
        assert distance(found, wanted, limit) == _full_distance(found, wanted, limit)


@given(names, names, st.integers(0, 3))
def test_the_bounded_distance_is_the_full_one_for_any_pair(a, b, limit):
    if abs(len(a) - len(b)) <= limit:
        assert distance(a, b, limit) == _full_distance(a, b, limit)
