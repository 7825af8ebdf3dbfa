"""What a walk (`walker`) has found so far on one instance of the reference pipeline, and the step
that settles one checkpoint.

The walk is the only one that changes a `Progress`: the modules that look for a checkpoint in a
special way (`dropout`, `fitted`, `copies`) return a `Step` and the walk records it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from grader.diagnosis.trace.documents import Site, Trace
from grader.diagnosis.walk.checkpoints import Instance
from grader.diagnosis.walk.findings import Departure, Mistake
from grader.diagnosis.walk.pipeline import STAGES, State

Nodes = tuple[int, ...]  # the student's tensor(s) holding a checkpoint: one, or one per slice


@dataclass(frozen=True)
class Step:
    """One checkpoint settled: the value the walk goes on from (the right one, or the student's own
    wrong one), the student's nodes holding it (None: not seen itself, e.g. inside a fused op), the
    mistake made there, and whether the walk stays on the reference's track."""

    value: torch.Tensor | None
    nodes: Nodes | None
    mistake: Mistake | None = None
    on_track: bool = True


@dataclass
class Progress:
    """The walk's state on one instance, checkpoint by checkpoint."""

    state: State  # checkpoint -> the value the walk goes on from
    nodes: dict[str, Nodes | None] = field(default_factory=dict)  # checkpoint -> where the student has it
    on_track: bool = True  # every checkpoint so far right: the reference's own values stand for them
    mistakes: list[Mistake] = field(default_factory=list)
    departure: Departure | None = None  # the checkpoint the student never produced, and where
    pending_mask: Mistake | None = None  # a mask left out, which may yet show up after the softmax
    unused: Site | None = None  # a stage computed right but never used: where the path broke

    @classmethod
    def start(cls, reference: Trace, instance: Instance) -> Progress:
        """The instance's seeds, and the stages whose right value can only be the reference's own."""
        state: State = dict(instance.seeds)
        for name in instance.order:
            if name in STAGES and name not in state and not STAGES[name].needs:
                value = instance.value(reference, name)
                if value is not None:
                    state[name] = value
        return cls(state)

    def accept(self, name: str, value: torch.Tensor | None, nodes: Nodes | None, stays_on_track: bool = True) -> None:
        """Checkpoint `name` has `value` (kept if known) and is held by `nodes`."""
        if value is not None:
            self.state[name] = value
        self.nodes[name] = nodes
        self.on_track = self.on_track and stays_on_track

    def record(self, name: str, step: Step) -> None:
        if step.mistake is not None:
            self.mistakes.append(step.mistake)
        self.accept(name, step.value, step.nodes, step.on_track)
