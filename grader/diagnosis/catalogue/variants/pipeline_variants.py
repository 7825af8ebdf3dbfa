"""Buggy variants generated from the pipeline description (grader.diagnosis.walk.pipeline): the
reference's functions and forward passes computed stage by stage, with one stage done one of its
known wrong ways, consistently in every function and class of a module that has that stage.

`staged(order, state, ctx, wrong)` runs the stages `order` on `state`; `variants(module, build)`
makes one Variant per stage alternative that names a misconception: `build(wrong)` returns the
module's overrides computed with that one wrong step (see the per-module files).
"""

from __future__ import annotations

from collections.abc import Callable, Set

import torch

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.walk.pipeline import AFTER_SOFTMAX, STAGES, Alternative, Context, State

Wrong = dict[str, Alternative]  # stage -> the wrong way it is done (usually one stage)
# wrong ways recognised on traces only: outputs all NaN say too little to name a cause by outputs alone
TRACE_ONLY = frozenset({"root-of-scores"})


def staged(order: list[str], state: State, ctx: Context, wrong: Wrong) -> torch.Tensor:
    """The last stage of `order`, each stage done rightly unless `wrong` says otherwise. A wrong
    way that does not apply to these inputs (softmax "over dim 0" of a vector) is the right way."""
    for name in order:
        if name == "dropped":
            weights = state["weights"]
            state["dropped"] = ctx.dropout(weights) if ctx.dropout is not None else weights
            continue
        value = wrong[name].fn(state, ctx) if name in wrong else None
        if value is None:
            value = STAGES[name].right(state, ctx)
        if value is None:
            value = state[name]  # a stage whose value was given
        state[name] = value
    return state[order[-1]]


def choices(stages: list[str], skip: Set[str] = frozenset()) -> list[tuple[str, Wrong]]:
    """(misconception, wrong) for every catalogued alternative of `stages`, and the mask applied
    after the softmax without renormalising (the mask left out, then the weights zeroed)."""
    found: list[tuple[str, Wrong]] = []
    for name in stages:
        for alternative in STAGES[name].alternatives:
            if (
                alternative.misconception
                and alternative.key not in skip | TRACE_ONLY
                and alternative not in AFTER_SOFTMAX
            ):
                found.append((alternative.misconception, {name: alternative}))
    by_rank: dict[tuple[int, str, str], Wrong] = {}  # the same wrong way in every stage of one rank
    for name in stages:
        for alternative in STAGES[name].alternatives:
            if alternative.misconception and alternative.key not in TRACE_ONLY:
                by_rank.setdefault((STAGES[name].rank, alternative.misconception, alternative.key), {})[name] = (
                    alternative
                )
    for (_, misconception, _), wrong in by_rank.items():
        if len(wrong) > 1:
            found.append((misconception, wrong))
    if "masked" in stages and "weights" in stages:
        nothing = next(a for a in STAGES["masked"].alternatives if a.key == "hides-nothing")
        after = next(a for a in STAGES["weights"].alternatives if a.key == "masked-after-softmax-unnormalized")
        found.append(("mask-after-softmax-unnormalized", {"masked": nothing, "weights": after}))
    return found


def variants(
    module: str, stages: list[str], build: Callable[[Wrong], dict], skip: Set[str] = frozenset()
) -> list[Variant]:
    return [Variant(misconception, {module: build(wrong)}) for misconception, wrong in choices(stages, skip)]
