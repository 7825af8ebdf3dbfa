"""Where in the student's code the walk (`walker`) places a mistake or a departure (see also `locate`).

`Sites` knows the student's trace, the call that matches the instance walked and the reference's
tensors of that call; what the walk has found so far (`Progress`) is passed in, never changed here.
"""

from __future__ import annotations

import torch

from grader.diagnosis.trace import locate
from grader.diagnosis.trace.constructors import parameter_origin
from grader.diagnosis.trace.documents import Node, Op, Ref, Site, Trace
from grader.diagnosis.trace.projection_roles import roles
from grader.diagnosis.walk.checkpoints import Instance
from grader.diagnosis.walk.findings import (
    MASK_STAGES,
    PROJECTIONS,
    SKIPPED_OPS,
    WRITES,
    Departure,
    call_nodes,
    is_result,
    rearranged,
)
from grader.diagnosis.walk.layout import ORDERED, Finder, close, comparable, same_tensor
from grader.diagnosis.walk.pipeline import COPIES, MASKS, STAGES, Alternative
from grader.diagnosis.walk.progress import Nodes, Progress

# ops that keep a tensor's elements in their order and only give it another shape: a merge or split of
# the heads that goes on through one of them must still hold the heads merged (or split)
REINTERPRETING = frozenset(
    {"view", "reshape", "flatten", "unflatten", "view_as", "reshape_as", "contiguous", "clone", "detach"}
    | {"to", "float", "double", "type_as", "unsqueeze", "squeeze"}
)


PROJECTING = frozenset({"linear", "matmul", "einsum", "mm", "bmm"})  # ops a projection is made of


class Sites:
    """The student's lines for one instance's findings."""

    def __init__(self, reference: Trace, instance: Instance, student: Trace, call: int):
        self.reference, self.instance, self.student = reference, instance, student
        self.call = call  # the student's call that matches the instance's
        self._reference_finder: Finder | None = None  # the reference's tensors of the matching call

    def of_mistake(
        self,
        index: int,
        name: str,
        alternative: Alternative,
        nodes: Nodes | None,
        later: Nodes | None,
        found: dict[str, Nodes | None],
    ) -> Site | None:
        """Where stage `name` (held by `nodes`, or seen only in a later stage's `later`) was done
        `alternative`'s wrong way."""
        site = self._site(index, name, alternative, nodes, found)
        if nodes is None and later:  # seen only in what was computed from it: a fused op, or a later step
            producer = self.student.producer(later[0])
            if name in MASK_STAGES and alternative.key in MASKS and alternative.key != "hides-nothing":
                site = locate.mask_culprit(self.student, producer) or site
            elif producer is not None and (site is None or alternative.skip):
                site = self.in_call(producer)
        return site

    def _site(
        self, index: int, name: str, alternative: Alternative, nodes: Nodes | None, found: dict[str, Nodes | None]
    ) -> Site | None:
        trace = self.student
        producer = trace.producer(nodes[0]) if nodes else None
        if name in MASK_STAGES and alternative.key in MASKS and alternative.key != "hides-nothing":
            return locate.mask_culprit(trace, producer) or (producer.site if producer else None)
        if alternative.skip:
            dead = locate.dead_op(trace, SKIPPED_OPS.get(name, set()), self.call if self.call >= 0 else None)
            if dead is not None:
                return self.in_call(dead)
            if index == len(self.instance.order) - 1 and nodes and self._returned_at(nodes) is not None:
                return self._returned_at(nodes)  # the value went out as it was: the return statement
            return locate.frontier(trace, nodes, self._known) or (producer.site if producer else None)
        if STAGES[name].kind == ORDERED and nodes:
            return producer.site if producer is not None else None
        if name == "scaled" and nodes:  # where the factor was applied (perhaps to the queries, or before a mask)
            scaling = locate.scaling_op(trace, nodes[0])
            if scaling is not None:
                return self.in_call(scaling)
        if alternative.misconception == "uses-scores-not-weights":
            dead = locate.dead_op(trace, SKIPPED_OPS["weights"], self.call if self.call >= 0 else None)
            if dead is not None:
                return self.in_call(dead)  # the weights were computed, then not used
        if producer is not None:
            return producer.site
        previous = self.instance.order[index - 1] if index else None
        return locate.frontier(trace, found.get(previous), self._known) if previous else None

    def _returned_at(self, nodes: Nodes) -> Site | None:
        if not 0 <= self.call < len(self.student.calls):
            return None
        call = self.student.calls[self.call]
        if call.returned and call.file and is_result(self.student, nodes):
            return Site(call.file, call.returned, call.function)
        return None

    def in_call(self, op: Op) -> Site:
        """The op's line in the function of the call (a helper's line is where the helper was called)."""
        if 0 <= self.call < len(self.student.calls):
            function = self.student.calls[self.call].function
            for frame in op.stack:
                if frame.function == function:
                    return frame
        return op.site

    def _known(self, node: Node) -> bool:
        """Whether a student's tensor is one the reference computed too (in the matching call)."""
        if node.value is None:
            return False
        if self._reference_finder is None:
            self._reference_finder = Finder(self.reference, call_nodes(self.reference, self.instance.call))
        return self._reference_finder.find(node.value, "free", sliced=False) is not None

    def unused_right(self, name: str, right: torch.Tensor) -> Site | None:
        """The stage's right value computed by the student but never used (a dead tensor)."""
        if not 0 <= self.call < len(self.student.calls):
            return None
        dead = call_nodes(self.student, self.call) - self.student.live
        found = Finder(self.student, dead).find(right, STAGES[name].kind) if dead else None
        producer = self.student.producer(found[0]) if found else None
        return self.in_call(producer) if producer is not None else None

    def departure(self, index: int, name: str, progress: Progress) -> Departure:
        """Where the student's computation went instead of stage `name` (found neither right nor
        any known wrong way), from the last checkpoint the student got right."""
        order = self.instance.order
        previous = next((progress.nodes[n] for n in reversed(order[:index]) if progress.nodes.get(n)), None)
        if name in PROJECTIONS and self.instance.seeded:  # the constructor's own parameters, or their use
            return Departure("parameters", projection_site(self.student), self._projection_op(), name)
        site = progress.unused
        if site is None and name in PROJECTIONS:  # siblings, not a chain: the projection that differs
            site = self._projection_op()
        if site is None and previous:
            site = self._broken_layout(index, progress)
        if site is None and previous:
            dead = [
                op
                for op in self.student.consumers(previous[0])
                if op.name not in locate.LAYOUT_OPS
                and op.outputs
                and not any(out in self.student.live for out in op.outputs)
            ]
            if dead:
                site = self.in_call(dead[0])  # what should have come next was computed, then dropped
        if site is None and previous and STAGES[name].kind == ORDERED:
            site = locate.last_rearrangement(self.student, previous)
        if site is None and name in COPIES:  # never written: after the last matrix that was
            writes = [op for op in self.student.ops if op.name in WRITES and op.call == self.call]
            site = self.in_call(writes[-1]) if writes else None
        if site is None:
            start = previous or self._call_inputs()
            site = locate.frontier(self.student, start, self._known) if start else None
        if site is None:  # everything computed from it is what the reference computes too: what is returned differs
            site = self._returned()
        return Departure(name, site)

    def _returned(self) -> Site | None:
        """The line the matching call returned from."""
        if not 0 <= self.call < len(self.student.calls):
            return None
        call = self.student.calls[self.call]
        return Site(call.file, call.returned, call.function) if call.returned and call.file else None

    def after_last(self, progress: Progress) -> Departure | None:
        """Every step found, but the student's call returns something computed from the last one
        (an extra layer, an extra operation) where the reference's returns it as it is."""
        order = [name for name in self.instance.order if name in STAGES]
        last = order[-1] if order else None
        nodes = progress.nodes.get(last) if last else None
        if not nodes or not progress.on_track or not 0 <= self.call < len(self.student.calls):
            return None
        reference_call = (
            self.reference.calls[self.instance.call] if 0 <= self.instance.call < len(self.reference.calls) else None
        )
        reference_last = self.instance.checkpoints.get(last)  # type: ignore[arg-type]
        if (
            reference_call is None
            or reference_last is None
            or not set(reference_call.result) & rearranged(self.reference, [reference_last])
        ):
            return None  # the reference's call returns something else (the walk covers part of it)
        result = self.student.calls[self.call].result
        if not result or set(result) & rearranged(self.student, nodes):
            return None
        site = locate.frontier(self.student, nodes)
        return Departure("returned", site) if site is not None else None

    def _broken_layout(self, index: int, progress: Progress) -> Site | None:
        """A view or transpose after the last checkpoint the student got right that no longer holds
        it in any layout the checkpoint allows (the arguments of a view swapped, say)."""
        before = next((n for n in reversed(self.instance.order[:index]) if progress.nodes.get(n)), None)
        value = progress.state.get(before) if before else None
        held = progress.nodes.get(before) if before else None
        if before is None or value is None or not held:
            return None
        want, kind = comparable(value), STAGES[before].kind
        node, live = held[0], self.student.live
        for _ in range(30):
            following = [
                op
                for op in self.student.consumers(node)
                if op.name in locate.LAYOUT_OPS and op.outputs and op.outputs[0] in live
            ]
            if not following:
                return None
            op = following[0]
            got = self.student.nodes[op.outputs[0]].value
            if got is None:
                return None
            if not same_tensor(comparable(got), want, kind):
                return op.site
            node = op.outputs[0]
        return None

    def broken_rearrangement(self, name: str, value: torch.Tensor | None, nodes: Nodes) -> Site | None:
        """A rearrangement (the heads split or merged) found at `nodes` that the student's own next
        views undo: the value goes on only through views, one of which gives it a shape that moves
        elements to other rows (a merging view's arguments swapped), and none after it holds it again.
        The student's rearrangement is what the last of those views gives: that is the step that
        differs, at that view's line."""
        if STAGES[name].kind != ORDERED or value is None or len(nodes) != 1:
            return None
        want, node, live = comparable(value), nodes[0], self.student.live
        broken: Op | None = None
        for _ in range(30):
            consumers = [op for op in self.student.consumers(node) if any(out in live for out in op.outputs)]
            if not consumers or any(op.name not in REINTERPRETING for op in consumers):
                break
            op = consumers[0]
            got = self.student.nodes[op.outputs[0]].value
            if got is None or got.numel() != want.numel():
                break
            if same_tensor(comparable(got), want, ORDERED):
                broken = None  # held again
            elif broken is None:
                broken = op
            node = op.outputs[0]
        return self.in_call(broken) if broken is not None else None

    def _call_inputs(self) -> Nodes | None:
        if not 0 <= self.call < len(self.student.calls):
            return None
        nodes = tuple(a.node for a in self.student.calls[self.call].args.values() if isinstance(a, Ref) and a.node >= 0)
        return nodes or None

    def _projection_op(self) -> Site | None:
        """The student's projection (an op computing from the call's input) that holds none of the
        reference's projections, or one another projection already holds (W_key used twice), in the
        student's own order; else one whose result nobody used."""
        inputs = self._call_inputs()
        if not inputs:
            return None
        projections = [
            (p, self.reference.nodes[self.instance.ops[p].outputs[0]].value)
            for p in self.instance.order
            if p in PROJECTIONS and self.instance.ops[p].outputs
        ]
        names = [p for p, w in projections if w is not None]
        wanted = [comparable(w) for _, w in projections if w is not None]
        theirs = [op for op in self.student.consumers(inputs[0]) if op.name not in locate.LAYOUT_OPS and op.outputs]
        if not theirs:  # the input is never used: the first projection computes from something else
            first = next((op for op in self.student.ops if op.call == self.call and op.name in PROJECTING), None)
            return self.in_call(first) if first is not None else None
        holds: list[set[int]] = []
        for op in theirs:
            got = self.student.nodes[op.outputs[0]].value
            got = comparable(got) if got is not None else None
            holds.append(
                {i for i, want in enumerate(wanted) if got is not None and want.shape == got.shape and close(want, got)}
            )
        used_as = roles(self.student, theirs)
        for op, held in zip(theirs, holds):  # one used as another projection than the one it computes
            role = used_as.get(op.index)
            if held and role in names and names.index(role) not in held and len(used_as) >= 2:
                return op.site
        # suspects: an op holding no projection, or one another op holds too (both, for now)
        suspects = [
            k
            for k, held in enumerate(holds)
            if not held or any(held & other for j, other in enumerate(holds) if j != k)
        ]
        for k in suspects:  # of two that hold the same, the one unlike the reference's at its place
            if k < len(wanted) and k not in holds[k] and holds[k] != {k}:
                return theirs[k].site
        if suspects:
            return theirs[suspects[0]].site
        for op in theirs:
            if not any(out in self.student.live for out in op.outputs):
                return op.site
        return None


def projection_site(student: Trace) -> Site | None:
    """The first projection of the student's forward: the line creating its parameter, else its own."""
    for op in student.ops:
        if op.name in PROJECTING and not any(frame.function == "__init__" for frame in op.stack):
            return parameter_origin(student, op) or op.site
    return None
