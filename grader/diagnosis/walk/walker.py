"""The walk of the recogniser: where a student's computation departs from the reference's, and why.

For each pass of the reference through the pipeline (an `Instance`), the walk goes stage by stage.
At each checkpoint it computes, from the values the student has produced so far:
1. the right value, found among the student's live tensors (other than the stage's own inputs)
   -> on to the next stage;
2. not found, but a later stage that depends on it is (a fused op such as
   scaled_dot_product_attention, a mask applied after the scaling...) -> done right;
3. a known wrong alternative (pipeline.STAGES) found -> a mistake, named by the alternative; the walk
   goes on from the student's own (wrong) value, so that a second mistake further down is named
   too. An alternative that leaves the stage out (no mask, no scaling, no out_proj) counts only if
   what follows was computed from it;
4. nothing: the departure. Its place is the first op that computes something from the last value
   the student got right.
Dropout is followed through the student's own ops: its random values cannot be recomputed, but
which checkpoint a dropout consumes, and whether it is active when the reference's is not, can.
Constructors are compared statement by statement (`constructors.init_difference`). Every finding
carries the student's line.

The walk decides, stage by stage, and records what it decided (`progress.Progress`). What it
asks, each in a module of its own: where a value is among the student's tensors (`search`),
where a mistake or a departure sits in the student's code (`sites`), and the stages found in a
special way: dropout (`dropout`), a divisor or a mask read off the student's own tensors
(`fitted`), Exercise 3.1's copies (`copies`).
"""

from __future__ import annotations

import torch

from grader.diagnosis.trace.documents import Trace
from grader.diagnosis.walk.checkpoints import Instance, Reference
from grader.diagnosis.walk.copies import copied
from grader.diagnosis.walk.dropout import dropped, misplaced
from grader.diagnosis.walk.findings import MASK_STAGES, Departure, Mistake, _safely
from grader.diagnosis.walk.fitted import fitted_mask, fitted_scaling
from grader.diagnosis.walk.layout import ORDERED, Finder, close, comparable
from grader.diagnosis.walk.masks import MASKS, tells_apart
from grader.diagnosis.walk.pipeline import AFTER_SOFTMAX, COPIES, STAGES, Alternative
from grader.diagnosis.walk.progress import Nodes, Progress, Step
from grader.diagnosis.walk.search import Search
from grader.diagnosis.walk.sites import Sites

Values = list[tuple[Alternative, torch.Tensor]]  # a stage's known wrong ways, with their values here


class Walk:
    """One instance of the reference pipeline, followed through a student's trace (`call`: the
    student's call that matches the instance's; `finder`: that call's live tensors)."""

    def __init__(self, reference: Reference, instance: Instance, student: Trace, finder: Finder, call: int = -1):
        self.reference, self.instance, self.student = reference.trace, instance, student
        self.search = Search(reference.trace, instance, student, finder)
        self.sites = Sites(reference.trace, instance, student, call)
        self.progress = Progress.start(reference.trace, instance)

    def run(self) -> Progress:
        """Stage by stage, until the student's computation departs; what was found."""
        for index, name in enumerate(self.instance.order):
            if name not in STAGES:
                continue
            if name == "dropped":
                self.progress.record(name, dropped(self.student, self.instance, self.progress, self.sites))
                continue
            done = self._copy(index, name) if name in COPIES else self._stage(index, name)
            if not done:
                break
            if name != "weights":  # a dropout on the weights is the "dropped" stage
                step = misplaced(self.student, name, self.progress.nodes.get(name))
                if step is not None:
                    self.progress.record(name, step)
        else:
            self.progress.departure = self.sites.after_last(self.progress)
        return self.progress

    # -- one stage: the evidence in order ------------------------------------------------------------
    def _stage(self, index: int, name: str) -> bool:
        """Stage `name` found right, done right out of sight, done a known wrong way, or departed
        from (False: the walk ends)."""
        progress, search = self.progress, self.search
        right = search.right(name, progress.state, progress.on_track)
        if name == "weights" and progress.pending_mask is not None and self._after_softmax():
            return True
        # 1. the right value
        nodes = search.find(name, right, progress.nodes)
        if nodes is not None:
            broken = self.sites.broken_rearrangement(name, right, nodes)
            if broken is not None:  # held for a moment, then reshaped into something else: departed there
                progress.departure = Departure(name, broken)
                return False
            progress.accept(name, right, nodes)
            return True
        # 2. done right inside a fused op, or in another order
        if self._right_later(index, name, right):
            return True
        # 3. a known wrong way: seen among the student's tensors, or in what the student computed from
        # it (another order, a fused op); a way that leaves the stage out only when what follows confirms it
        alternatives = [a for a in STAGES[name].alternatives if a not in AFTER_SOFTMAX]
        values = self._alternatives(name, alternatives, right)
        for alternative, value in values:
            nodes = search.find(name, value, progress.nodes) if not alternative.skip else None
            if nodes is not None:
                self._wrong(index, name, alternative, value, nodes)
                return True
        # (a fused op that also does a later stage a wrong way: the later stage will say which)
        if self._right_later(index, name, right, wrongs=1):
            return True
        # a rearrangement (heads split) seen only past two later stages done wrong (no mask, no scaling)
        if STAGES[name].kind == ORDERED and self._right_later(index, name, right, wrongs=2):
            return True
        computed = self._carried_on_unused(index, name, right)
        for skips in (False, True):
            if self._done_wrong(index, name, values, skips, computed):
                return True
        return self._right_after_all(index, name, right)

    def _carried_on_unused(self, index: int, name: str, right: torch.Tensor | None) -> bool:
        """The stage's right value computed but not used, and the next stage computed right from it
        (not used either): the student's unused branch goes on like the reference's, so the stage
        was not left out (the weights computed right, then the scores multiplied by the values)."""
        if right is None or self.sites.unused_right(name, right) is None:
            return False
        following = next((n for n in self.instance.order[index + 1 :] if n in STAGES and n != "dropped"), None)
        if following is None:
            return False
        value = _safely(STAGES[following].right, {**self.progress.state, name: right}, self.search.ctx)
        return value is not None and self.sites.unused_right(following, value) is not None

    def _right_later(self, index: int, name: str, right: torch.Tensor | None, wrongs: int = 0) -> bool:
        """The right value, seen only in a later stage computed from it (a fused op, another order);
        `wrongs` later stages may be done a known wrong way on the way."""
        if right is None:
            return False
        if self.search.lookahead(index, {**self.progress.state, name: right}, self.progress.nodes, wrongs):
            self.progress.accept(name, right, None, stays_on_track=self.progress.on_track)
            return True
        return False

    def _done_wrong(self, index: int, name: str, values: Values, skips: bool, computed: bool = False) -> bool:
        """A known wrong way that leaves the stage out (`skips`) or not: seen among the student's
        tensors (a stage left out only when what follows confirms it; when the student `computed`
        the stage's right value and carried on from it unused, only when the next stage is right
        from the stage left out), read
        off them (a divisor or a mask of the student's own), or seen in what the student computed
        from it."""
        progress, search = self.progress, self.search
        for alternative, value in values:
            if alternative.skip != skips:
                continue
            nodes = search.find(name, value, progress.nodes, inputs_too=alternative.skip)
            state = dict(progress.state, **{name: value})
            if nodes is not None and (
                not alternative.skip or search.confirmed(index, state, nodes, progress.nodes, strictly=computed)
            ):
                self._wrong(index, name, alternative, value, nodes)
                return True
        if not skips and name == "scaled":
            fitted = fitted_scaling(search, progress, index, name, strictly=computed)
            if fitted is not None:
                self._wrong(index, name, *fitted)
                return True
        if not skips and name in MASK_STAGES:
            step = fitted_mask(search, progress, index, name)
            if step is not None:
                progress.record(name, step)
                return True
        for alternative, value in values:
            if alternative.skip != skips:
                continue
            later = search.lookahead(index, dict(progress.state, **{name: value}), progress.nodes)
            if later is not None:
                self._wrong(index, name, alternative, value, None, later)
                return True
        return False

    def _right_after_all(self, index: int, name: str, right: torch.Tensor | None) -> bool:
        """The right value in the stage's own input (a stage that changes nothing here), or computed
        right but never used (what comes next shows what was used instead); else the departure."""
        progress = self.progress
        nodes = self.search.find(name, right, progress.nodes, inputs_too=True)
        if nodes is not None:
            progress.accept(name, right, nodes)
            return True
        unused = self.sites.unused_right(name, right) if right is not None else None
        if unused is not None:
            progress.unused = progress.unused or unused
            progress.accept(name, right, None)
            return True
        progress.departure = self.sites.departure(index, name, progress)
        return False

    def _alternatives(self, name: str, alternatives: list[Alternative], right: torch.Tensor | None) -> Values:
        """The stage's known wrong ways that give something else than the right value here."""
        state = dict(self.progress.state)
        if right is not None and not STAGES[name].needs:
            state[name] = right
        values = []
        for alternative in sorted(alternatives, key=lambda a: a.skip):
            value = _safely(alternative.fn, state, self.search.ctx)
            if value is None or (
                right is not None and value.shape == right.shape and close(comparable(value), comparable(right))
            ):
                continue
            values.append((alternative, value))
        return values

    def _wrong(
        self,
        index: int,
        name: str,
        alternative: Alternative,
        value: torch.Tensor,
        nodes: Nodes | None,
        later: Nodes | None = None,
    ) -> None:
        """Stage `name` done `alternative`'s wrong way; the walk goes on from the student's value."""
        progress = self.progress
        site = self.sites.of_mistake(index, name, alternative, nodes, later, progress.nodes)
        misconception = alternative.misconception
        if alternative.key in MASKS and not tells_apart(MASKS[alternative.key][1](value.shape[-1])):
            misconception = None  # at this length the wrong mask hides every entry: which mistake is unknown
        mistake = Mistake(name, misconception, alternative.key, site, inferred=nodes is None)
        progress.mistakes.append(mistake)
        if name == "masked" and alternative.key == "hides-nothing":
            progress.pending_mask = mistake
        if alternative.key == "no-softmax":  # a dropout on the scores was on the student's "weights"
            progress.mistakes = [m for m in progress.mistakes if not m.key.startswith("dropout-on-")]
        if name == "context" and alternative.key.startswith("from-"):  # the context from the scores: so is its dropout
            used = "dropout-on-" + alternative.key.removeprefix("from-")
            progress.mistakes = [m for m in progress.mistakes if m.key != used]
        progress.accept(name, value, nodes, stays_on_track=False)

    # -- stages found in a special way ---------------------------------------------------------------
    def _after_softmax(self) -> bool:
        """The mask left out before the softmax and applied after it (renormalised or not)."""
        progress = self.progress
        for alternative in AFTER_SOFTMAX:
            value = _safely(alternative.fn, progress.state, self.search.ctx)
            nodes = self.search.find("weights", value, progress.nodes)
            if value is None or nodes is None:
                continue
            pending, progress.pending_mask = progress.pending_mask, None
            if pending in progress.mistakes:
                progress.mistakes.remove(pending)
            mistake = None
            if alternative.misconception:
                masking = self.student.producer(nodes[0])
                mistake = Mistake(
                    "weights", alternative.misconception, alternative.key, masking.site if masking else None
                )
            progress.record("weights", Step(value, nodes, mistake, on_track=False))
            return True
        return False

    def _copy(self, index: int, name: str) -> bool:
        """Exercise 3.1: what the student wrote into the matrix the reference writes here."""
        found = copied(self.reference, self.instance, self.student, name)
        if found is None:
            return self._stage(index, name)
        if isinstance(found, Step):
            self.progress.record(name, found)
            return True
        self.progress.departure = found
        return False
