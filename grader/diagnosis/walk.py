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
Constructors are compared statement by statement (`locate.init_difference`). Every finding carries
the student's line.
"""
from __future__ import annotations

import torch

from grader.diagnosis import locate
from grader.diagnosis.checkpoints import Instance, Reference
from grader.diagnosis.findings import MASK_STAGES, Departure, Mistake, _safely
from grader.diagnosis.layout import ORDERED, Finder, close, comparable
from grader.diagnosis.pipeline import AFTER_SOFTMAX, COPIES, MASKS, STAGES, Alternative, Context, State, depends
from grader.diagnosis.trace_documents import Site, Trace
from grader.diagnosis.walk_follow import Following
from grader.diagnosis.walk_place import Placing


class Walk(Following, Placing):
    """One instance of the reference pipeline, followed through a student's trace."""

    def __init__(self, reference: Reference, instance: Instance, student: Trace, finder: Finder, call: int = -1):
        self.reference = reference
        self.instance = instance
        self.student = student
        self.call = call  # the student's call that matches the instance's
        self._reference_finder: Finder | None = None  # the reference's tensors of the matching call
        self.finder = finder
        self.ctx: Context = instance.context
        self.state: State = dict(instance.seeds)
        for name in instance.order:  # stages whose right value can only be the reference's own
            if name in STAGES and name not in self.state and not STAGES[name].needs:
                value = instance.value(reference.trace, name)
                if value is not None:
                    self.state[name] = value
        self.nodes: dict[str, tuple[int, ...] | None] = {}
        self.on_track = True
        self.mistakes: list[Mistake] = []
        self.departure: Departure | None = None
        self.pending_mask: Mistake | None = None
        self.unused: Site | None = None  # a stage computed right but never used: where the path broke

    # -- values ----------------------------------------------------------------------------------------
    def _right(self, name: str, state: State, on_track: bool) -> torch.Tensor | None:
        if on_track or not STAGES[name].needs:
            value = self.instance.value(self.reference.trace, name)
            if value is not None:
                return value
        return _safely(STAGES[name].right, state, self.ctx)

    def _inputs(self, name: str) -> frozenset[int]:
        """The nodes of the stage's inputs, and whatever only rearranges them (views, copies): a
        stage that computes something is not found there. (A stage that only rearranges, such as
        merging the heads, is found in its own layout: see `layout.ORDERED`.)"""
        if STAGES[name].kind == ORDERED:
            return frozenset()
        todo: list[int] = []
        for need in STAGES[name].needs:
            todo += list(self.nodes.get(need) or ())
        nodes: set[int] = set()
        while todo:
            node = todo.pop()
            if node in nodes:
                continue
            nodes.add(node)
            todo += [out for op in self.student.consumers(node) if op.name in locate.LAYOUT_OPS for out in op.outputs]
        return frozenset(nodes)

    def _find(self, name: str, value: torch.Tensor | None, inputs_too: bool = False) -> tuple[int, ...] | None:
        if value is None:
            return None
        exclude = frozenset() if inputs_too else self._inputs(name)
        nodes = self.finder.find(value, STAGES[name].kind, exclude=exclude)
        if nodes is None and bool(value.isnan().any()):
            # a row that hides every key: softmax gives NaN, the fused scaled_dot_product_attention zeros
            fused = self.finder.find(torch.nan_to_num(value, nan=0.0), STAGES[name].kind, exclude=exclude)
            if fused is not None and all((op := self.student.producer(node)) is not None
                                         and op.name == "scaled_dot_product_attention" for node in fused):
                return fused
        return nodes

    def _lookahead(self, index: int, state: State, wrongs: int = 0,
                   origin: str | None = None) -> tuple[int, ...] | None:
        """With `state` after stage `index`, the nodes of a later stage computed from it, if found;
        `wrongs` later stages may be done one of their known wrong ways on the way (a fused op
        that also leaves the mask out)."""
        order = self.instance.order
        origin = origin or order[index]
        state = dict(state)
        for position in range(index + 1, len(order)):
            name = order[position]
            if name not in STAGES:
                return None
            value = self._right(name, state, on_track=False)
            if value is None:
                return None
            if depends(name, origin, order):
                nodes = self._find(name, value)
                if nodes is not None:
                    return nodes
            if wrongs:
                for alternative in STAGES[name].alternatives:
                    if alternative in AFTER_SOFTMAX:
                        continue
                    wrong = _safely(alternative.fn, state, self.ctx)
                    if wrong is None:
                        continue
                    if depends(name, origin, order) and not alternative.skip and self._find(name, wrong) is not None:
                        return self._find(name, wrong)
                    nodes = self._lookahead(position, dict(state, **{name: wrong}), wrongs - 1, origin)
                    if nodes is not None:
                        return nodes
            state[name] = value
        return None

    def _confirmed(self, index: int, state: State, nodes: tuple[int, ...]) -> bool:
        """A stage left out is believed only if what follows was computed from its input."""
        order = self.instance.order
        if index + 1 >= len(order):
            return self._is_result(nodes)
        following = order[index + 1]
        if following == "dropped":
            return self._dropout_of(nodes) is not None or \
                self._lookahead(index + 1, dict(state, dropped=state[order[index]])) is not None
        stage = STAGES.get(following)
        if stage is None:
            return False
        right = _safely(stage.right, state, self.ctx)
        if right is not None and self._find(following, right) is not None:
            return True
        for alternative in stage.alternatives:
            if not alternative.skip:
                value = _safely(alternative.fn, state, self.ctx)
                if value is not None and self._find(following, value) is not None:
                    return True
        return self._lookahead(index, state) is not None

    def _is_result(self, nodes: tuple[int, ...]) -> bool:
        results = {n for call in self.student.calls for n in call.result}
        todo, seen = list(nodes), set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in results:
                return True
            todo += [out for op in self.student.consumers(node) if op.name in locate.LAYOUT_OPS for out in op.outputs]
        return False

    # -- the walk ---------------------------------------------------------------------------------------
    def run(self) -> None:
        for index, name in enumerate(self.instance.order):
            if name not in STAGES:
                continue
            if name == "dropped":
                self._dropped()
                continue
            done = self._copy(name) if name in COPIES else self._stage(index, name)
            if not done:
                return
            if name != "weights":  # a dropout on the weights is the "dropped" stage
                self._follow_dropout(name)

    def _stage(self, index: int, name: str) -> bool:
        stage = STAGES[name]
        right = self._right(name, self.state, self.on_track)
        alternatives = [a for a in stage.alternatives if a not in AFTER_SOFTMAX]
        if name == "weights" and self.pending_mask is not None and self._after_softmax():
            return True
        # 1. the right value
        nodes = self._find(name, right)
        if nodes is not None:
            self._accept(name, right, nodes)
            return True
        # 2. done right inside a fused op, or in another order
        if right is not None and self._lookahead(index, dict(self.state, **{name: right})):
            self._accept(name, right, None, stays_on_track=self.on_track)
            return True
        # 3. a known wrong way: seen among the student's tensors, or in what the student computed from
        # it (another order, a fused op); a way that leaves the stage out only when what follows confirms it
        values = self._alternatives(name, alternatives, right)
        for alternative, value in values:
            nodes = self._find(name, value) if not alternative.skip else None
            if nodes is not None:
                self._wrong(index, name, alternative, value, nodes)
                return True
        # (a fused op that also does a later stage a wrong way: the later stage will say which)
        if right is not None and self._lookahead(index, dict(self.state, **{name: right}), wrongs=1):
            self._accept(name, right, None, stays_on_track=self.on_track)
            return True
        for skips in (False, True):
            for alternative, value in values:
                if alternative.skip != skips:
                    continue
                nodes = self._find(name, value, inputs_too=alternative.skip)
                state = dict(self.state, **{name: value})
                if nodes is not None and (not alternative.skip or self._confirmed(index, state, nodes)):
                    self._wrong(index, name, alternative, value, nodes)
                    return True
            if not skips and name == "scaled" and self._fitted_scaling(index, name):
                return True
            if not skips and name in MASK_STAGES and self._fitted_mask(index, name):
                return True
            for alternative, value in values:
                if alternative.skip != skips:
                    continue
                later = self._lookahead(index, dict(self.state, **{name: value}))
                if later is not None:
                    self._wrong(index, name, alternative, value, None, later)
                    return True
        # the right value in the stage's own input after all (a stage that changes nothing here)
        nodes = self._find(name, right, inputs_too=True)
        if nodes is not None:
            self._accept(name, right, nodes)
            return True
        # computed right but never used: what comes next shows what was used instead
        unused = self._unused_right(name) if right is not None else None
        if unused is not None:
            self.unused = self.unused or unused
            self._accept(name, right, None)
            return True
        self._depart(index, name)
        return False

    def _wrong(self, index: int, name: str, alternative: Alternative, value: torch.Tensor,
               nodes: tuple[int, ...] | None, later: tuple[int, ...] | None = None) -> None:
        self._mistake(index, name, alternative, nodes, later)
        if alternative.key == "no-softmax":  # a dropout on the scores was on the student's "weights"
            self.mistakes = [m for m in self.mistakes if not m.key.startswith("dropout-on-")]
        self._accept(name, value, nodes, stays_on_track=False)

    def _alternatives(self, name: str, alternatives: list[Alternative],
                      right: torch.Tensor | None) -> list[tuple[Alternative, torch.Tensor]]:
        state = dict(self.state)
        if right is not None and not STAGES[name].needs:
            state[name] = right
        values = []
        for alternative in sorted(alternatives, key=lambda a: a.skip):
            value = _safely(alternative.fn, state, self.ctx)
            if value is None or (right is not None and value.shape == right.shape
                                 and close(comparable(value), comparable(right))):
                continue
            values.append((alternative, value))
        return values

    def _accept(self, name: str, value: torch.Tensor | None, nodes: tuple[int, ...] | None,
                stays_on_track: bool = True) -> None:
        if value is not None:
            self.state[name] = value
        self.nodes[name] = nodes
        self.on_track = self.on_track and stays_on_track

    def _mistake(self, index: int, name: str, alternative: Alternative, nodes: tuple[int, ...] | None,
                 later: tuple[int, ...] | None = None) -> None:
        site = self._site(index, name, alternative, nodes)
        if nodes is None and later:  # seen only in what was computed from it: a fused op, or a later step
            producer = self.student.producer(later[0])
            if name in MASK_STAGES and alternative.key in MASKS and alternative.key != "hides-nothing":
                site = locate.mask_culprit(self.student, producer) or site
            elif producer is not None and (site is None or alternative.skip):
                site = self._in_call(producer)
        mistake = Mistake(name, alternative.misconception, alternative.key, site)
        self.mistakes.append(mistake)
        if name == "masked" and alternative.key == "hides-nothing":
            self.pending_mask = mistake

