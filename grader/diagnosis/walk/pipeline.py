"""The chapter's attention pipeline, stage by stage, with the known wrong ways of doing each stage.

One description serves two purposes:
- the recogniser (`grader.diagnosis.walk.recognise`) walks a student's trace stage by stage: at each
  checkpoint it computes the right value and each wrong alternative from the values the student
  has produced so far, and looks for them among the student's tensors;
- the buggy variants of the reference (`grader.diagnosis.catalogue.variants`) are the reference's forward
  passes with one stage replaced by one of its alternatives.

A stage computes its checkpoint from a `state` (checkpoint name -> tensor, in the reference's
layout) and a `Context` (the sizes, mask and divisor of the module or call at hand). An alternative
names the misconception it reproduces (None: a mistake the catalogue has no name for).
"""

from __future__ import annotations

from grader.diagnosis.walk.layout import ATTENTION, EXACT, FREE, ORDERED
from grader.diagnosis.walk.stages_after_weights import (
    COPIES,
    _concatenated,
    _context_from,
    _copy_alternatives,
    _given,
    _joined,
    _keep,
    _masked_weights,
    _merge,
    _no_out_proj,
    _not_renormalized,
    _scores_swapped,
    _split,
    _wrong_alternatives,
    context_right,
    output_right,
    renormalized_right,
    scores_right,
)
from grader.diagnosis.walk.stages_to_weights import (
    AFTER_SOFTMAX,
    MASKS,
    NO_SOFTMAX,
    SCALINGS,
    SOFTMAX_DIMS,
    Alternative,
    Context,
    Stage,
    State,
    _masked,
    mask_misconception,
    masked_right,
    scaled_right,
    triangle,
    weights_right,
)

__all__ = [
    "AFTER_SOFTMAX",
    "COPIES",
    "MASKS",
    "STAGES",
    "Alternative",
    "Context",
    "Stage",
    "State",
    "depends",
    "mask_misconception",
    "stage_order",
    "triangle",
]

STAGES: dict[str, Stage] = {
    stage.name: stage
    for stage in [
        Stage("mask", ATTENTION, _given("mask"), _wrong_alternatives(_keep), rank=0),
        Stage("queries", FREE, _given("queries"), rank=1),
        Stage("keys", FREE, _given("keys"), rank=1),
        Stage("values", FREE, _given("values"), rank=1),
        Stage(
            "split_queries",
            ORDERED,
            _split("queries"),
            (Alternative("straight-view", "heads-split-wrong", _split("queries", straight=True)),),
            rank=2,
            needs=("queries",),
        ),
        Stage(
            "split_keys",
            ORDERED,
            _split("keys"),
            (Alternative("straight-view", "heads-split-wrong", _split("keys", straight=True)),),
            rank=2,
            needs=("keys",),
        ),
        Stage(
            "split_values",
            ORDERED,
            _split("values"),
            (Alternative("straight-view", "heads-split-wrong", _split("values", straight=True)),),
            rank=2,
            needs=("values",),
        ),
        Stage(
            "scores",
            ATTENTION,
            scores_right,
            (Alternative("queries-and-keys-swapped", None, _scores_swapped),),
            rank=3,
            needs=("queries", "keys", "split_queries", "split_keys"),
        ),
        Stage("masked", ATTENTION, masked_right, _wrong_alternatives(_masked), rank=4, needs=("scores",)),
        Stage("scaled", ATTENTION, scaled_right, SCALINGS, rank=5, needs=("masked", "scores")),
        Stage(
            "weights",
            ATTENTION,
            weights_right,
            SOFTMAX_DIMS + (NO_SOFTMAX,) + AFTER_SOFTMAX,
            rank=6,
            needs=("scaled", "masked", "scores"),
        ),
        Stage(
            "masked_weights",
            ATTENTION,
            _masked_weights(None),
            _wrong_alternatives(_masked_weights),
            rank=6,
            needs=("mask",),
        ),
        Stage(
            "renormalized",
            ATTENTION,
            renormalized_right,
            (Alternative("not-renormalized", "mask-after-softmax-unnormalized", _not_renormalized, skip=True),),
            rank=7,
            needs=("masked_weights",),
        ),
        Stage("dropped", ATTENTION, lambda s, c: s.get("weights"), rank=8, needs=("weights",)),
        Stage(
            "context",
            FREE,
            context_right,
            tuple(
                Alternative(f"from-{name}", "uses-scores-not-weights", _context_from(name))
                for name in ("scores", "scaled", "masked")
            ),
            rank=9,
            needs=("dropped", "weights", "values", "split_values", "scores", "scaled", "masked"),
        ),
        Stage(
            "merged",
            ORDERED,
            _merge(),
            (Alternative("straight-view", "heads-merged-wrong", _merge(straight=True)),),
            rank=10,
            needs=("context",),
        ),
        Stage(
            "output",
            FREE,
            output_right,
            (Alternative("no-out-proj", "out-proj-missing", _no_out_proj, skip=True),),
            rank=11,
            needs=("merged",),
        ),
        Stage(
            "concat",
            FREE,
            _joined,
            tuple(Alternative(f"dim={d}", "concat-wrong-dim", _concatenated(d)) for d in (0, 1, -2)),
            rank=12,
        ),
        *(Stage(name, EXACT, _given(name), _copy_alternatives(name), rank=1) for name in COPIES),
    ]
}


def depends(later: str, earlier: str, present: set[str] | list[str]) -> bool:
    """Whether checkpoint `later` is computed (through the checkpoints `present`) from `earlier`."""
    todo, seen = [later], set()
    while todo:
        name = todo.pop()
        for need in STAGES[name].needs if name in STAGES else ():
            if need == earlier:
                return True
            if need in present and need not in seen:
                seen.add(need)
                todo.append(need)
    return False


def stage_order(name: str) -> int:
    return STAGES[name].rank if name in STAGES else 99
