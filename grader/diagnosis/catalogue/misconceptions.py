"""The misconception catalogue: ids and the book section to reread. Titles, explanations and hints
live in the message catalogues (templates/i18n/*.toml) under `misconceptions.<id>`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str
    book_section: str  # where to reread, e.g. "3.3.1"


CATALOGUE: dict[str, Misconception] = {
    m.id: m
    for m in [
        Misconception("softmax-wrong-dim", "3.3.1"),
        Misconception("missing-scaling", "3.4.1"),
        Misconception("wrong-scaling", "3.4.1"),
        Misconception("uses-scores-not-weights", "3.3.1"),
        Misconception("mask-not-applied", "3.5.1"),
        Misconception("mask-includes-diagonal", "3.5.1"),
        Misconception("mask-inverted", "3.5.1"),
        Misconception("mask-not-sliced", "3.5.3"),
        Misconception("mask-after-softmax-unnormalized", "3.5.1"),
        Misconception("dropout-misplaced", "3.5.2"),
        Misconception("heads-split-wrong", "3.6.2"),
        Misconception("heads-merged-wrong", "3.6.2"),
        Misconception("out-proj-missing", "3.6.2"),
        Misconception("heads-not-registered", "3.6.1"),
        Misconception("concat-wrong-dim", "3.6.1"),
        Misconception("weights-not-transposed", "3.4.2"),
        Misconception("weights-swapped", "3.4.2"),
        Misconception("wrong-init", "3.4.1"),
        Misconception("qkv-bias-ignored", "3.4.2"),
        Misconception("wrong-config", "3.6.2"),
        Misconception("hardcoded-shape", "3.5.3"),
        # met first on the MindSpore track (exercise-api.md §4); texts in templates/i18n/*/mindspore.toml
        Misconception("mask-trainable", "3.5.3"),
        Misconception("dropout-keep-prob", "3.5.2"),
        Misconception("dim-not-axis", "3.3.1"),
        Misconception("torch-api", "3.4.2"),
    ]
}
