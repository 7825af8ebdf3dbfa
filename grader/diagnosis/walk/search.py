"""Where a checkpoint's value is among the student's tensors, for the walk (`walker`).

`Search` computes a checkpoint's right value (the reference's own while the student is on its
track, else from the student's values so far), looks for a value among the student's live tensors
of the matching call (`layout.Finder`: any layout the checkpoint allows) but not in the stage's own
inputs, looks ahead for a later checkpoint computed from it (a fused op, another order), and
confirms a stage left out by what follows it. What the walk has found so far (`Progress.nodes`,
`found` here) is passed in; nothing here changes it.
"""

from __future__ import annotations

import torch

from grader.diagnosis.trace.documents import LAYOUT_OPS, Trace
from grader.diagnosis.walk.checkpoints import Instance
from grader.diagnosis.walk.dropout import dropout_of
from grader.diagnosis.walk.findings import WRITES, _safely, is_result, rearranged
from grader.diagnosis.walk.layout import ORDERED, Finder
from grader.diagnosis.walk.pipeline import AFTER_SOFTMAX, COPIES, STAGES, State, depends, stage_order
from grader.diagnosis.walk.progress import Nodes

Found = dict[str, Nodes | None]  # checkpoint -> the student's nodes holding it (`Progress.nodes`)


class Search:
    """Looks for one instance's checkpoints in the student's trace (see the module's docstring)."""

    def __init__(self, reference: Trace, instance: Instance, student: Trace, finder: Finder):
        self.reference, self.instance, self.student, self.finder = reference, instance, student, finder
        self.ctx = instance.context
        self._depends: dict[tuple[str, str], bool] = {}

    def right(self, name: str, state: State, on_track: bool) -> torch.Tensor | None:
        """The stage's right value: the reference's own while on track (or for a stage that needs
        nothing), else computed from `state`."""
        if on_track or not STAGES[name].needs:
            value = self.instance.value(self.reference, name)
            if value is not None:
                return value
        return _safely(STAGES[name].right, state, self.ctx)

    def inputs(self, name: str, found: Found) -> frozenset[int]:
        """The nodes of the stage's inputs, and whatever only rearranges them (views, copies): a
        stage that computes something is not found there. (A stage that only rearranges, such as
        merging the heads, is found in its own layout: see `layout.ORDERED`.)"""
        if STAGES[name].kind == ORDERED:
            return frozenset()
        todo: list[int] = []
        for need in STAGES[name].needs:
            todo += list(found.get(need) or ())
        return frozenset(rearranged(self.student, todo))

    def find(
        self,
        name: str,
        value: torch.Tensor | None,
        found: Found,
        inputs_too: bool = False,
        also: frozenset[int] = frozenset(),
    ) -> Nodes | None:
        """The student's nodes holding `value` as checkpoint `name` (not in its inputs, unless
        `inputs_too`, nor in the nodes `also`)."""
        if value is None or not self.finder.may_hold(value):
            return None
        nan = torch.isnan(value)
        if bool(nan.all()):
            return None  # all NaN (or nothing): any NaN of the student's would match, which says nothing
        exclude = (frozenset() if inputs_too else self.inputs(name, found)) | also
        if name in COPIES:  # a matrix written into another matrix is not this one's copy
            exclude |= self._sources({n for other, nodes in found.items() if other != name and nodes for n in nodes})
        nodes = self.finder.find(value, STAGES[name].kind, exclude=exclude)
        if nodes is None and bool(nan.any()):
            # a row that hides every key: softmax gives NaN, the fused scaled_dot_product_attention zeros
            fused = self.finder.find(torch.nan_to_num(value, nan=0.0), STAGES[name].kind, exclude=exclude)
            if fused is not None and all(
                (op := self.student.producer(node)) is not None and op.name == "scaled_dot_product_attention"
                for node in fused
            ):
                return fused
        return nodes

    def depends(self, later: str, earlier: str) -> bool:
        """`pipeline.depends` through this instance's checkpoints, worked out once per pair."""
        key = (later, earlier)
        if key not in self._depends:
            self._depends[key] = depends(later, earlier, self.instance.order)
        return self._depends[key]

    def _sources(self, nodes: set[int]) -> frozenset[int]:
        """`nodes` and what they were copied or rearranged from (back through writes and views)."""
        todo, seen = list(nodes), set[int]()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            op = self.student.producer(node)
            if op is not None and (op.name in LAYOUT_OPS or op.name in WRITES):
                todo += list(op.inputs)
        return frozenset(seen)

    def lookahead(
        self, index: int, state: State, found: Found, wrongs: int = 0, origin: str | None = None
    ) -> Nodes | None:
        """With `state` after stage `index`, the nodes of a later stage computed from it, if found;
        `wrongs` later stages may be done one of their known wrong ways on the way (a fused op
        that also leaves the mask out)."""
        order = self.instance.order
        origin = origin or order[index]
        state = dict(state)
        # a later stage is a tensor computed after `origin`: not one holding a stage before it
        before = frozenset(
            n for stage, nodes in found.items() if nodes and stage_order(stage) < stage_order(origin) for n in nodes
        )
        for position in range(index + 1, len(order)):
            name = order[position]
            if name not in STAGES:
                return None
            value = self.right(name, state, on_track=False)
            if value is None:
                return None
            if self.depends(name, origin):
                nodes = self.find(name, value, found, also=before)
                if nodes is not None:
                    return nodes
            if wrongs:
                nodes = self._wrong_ahead(position, name, state, found, wrongs, origin, before)
                if nodes is not None:
                    return nodes
            state[name] = value
        return None

    def _wrong_ahead(
        self, position: int, name: str, state: State, found: Found, wrongs: int, origin: str, before: frozenset[int]
    ) -> Nodes | None:
        """`lookahead` through stage `name` done one of its known wrong ways."""
        for alternative in STAGES[name].alternatives:
            if alternative in AFTER_SOFTMAX:
                continue
            wrong = _safely(alternative.fn, state, self.ctx)
            if wrong is None:
                continue
            nodes = (
                self.find(name, wrong, found, also=before)
                if self.depends(name, origin) and not alternative.skip
                else None
            )
            if nodes is not None:
                return nodes
            nodes = self.lookahead(position, dict(state, **{name: wrong}), found, wrongs - 1, origin)
            if nodes is not None:
                return nodes
        return None

    def confirmed(self, index: int, state: State, nodes: Nodes, found: Found, strictly: bool = False) -> bool:
        """A stage left out (held by `nodes`) is believed only if what follows was computed from its
        input; `strictly`: the next stage, done right (a student who computed the stage's right value
        and used something else has left nothing out unless what follows shows it plainly)."""
        order = self.instance.order
        if index + 1 >= len(order):
            return is_result(self.student, nodes)
        following = order[index + 1]
        if following == "dropped":
            return (
                dropout_of(self.student, nodes) is not None
                or self.lookahead(index + 1, dict(state, dropped=state[order[index]]), found) is not None
            )
        stage = STAGES.get(following)
        if stage is None:
            return False
        right = _safely(stage.right, state, self.ctx)
        if right is not None and self.find(following, right, found) is not None:
            return True
        if strictly:
            return False
        for alternative in stage.alternatives:
            if not alternative.skip:
                value = _safely(alternative.fn, state, self.ctx)
                if value is not None and self.find(following, value, found) is not None:
                    return True
        if self.lookahead(index, state, found) is not None:
            return True
        # the next stage left out too (no mask, then no scaling): what follows it computed from it
        for alternative in stage.alternatives:
            value = _safely(alternative.fn, state, self.ctx) if alternative.skip else None
            if value is not None and self.lookahead(index + 1, dict(state, **{following: value}), found) is not None:
                return True
        return False
