"""The recogniser: where a student's computation departs from the reference's, and why.

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

from dataclasses import dataclass, field

import torch

from grader.diagnosis import locate
from grader.diagnosis.checkpoints import DROPOUT_OPS, Instance, Reference
from grader.diagnosis.layout import ORDERED, Finder, close, comparable
from grader.diagnosis.pipeline import (AFTER_SOFTMAX, COPIES, MASKS, STAGES, Alternative, Context, State, depends,
                                       mask_misconception)
from grader.diagnosis.traces import Op, Ref, Site, Trace

PROJECTIONS = ("queries", "keys", "values")
MASK_STAGES = ("mask", "masked", "masked_weights")
WRITES = frozenset({"copy_", "__setitem__", "set_", "fill_", "zero_"})
SKIPPED_OPS = {"masked": locate.MASKING - {"scaled_dot_product_attention"}, "output": {"linear"},
               "scaled": {"div", "mul", "__truediv__", "true_divide"}, "renormalized": {"div", "__truediv__"},
               "weights": {"softmax", "exp", "_softmax"}}


@dataclass
class Mistake:
    stage: str  # the checkpoint where it shows
    misconception: str | None  # None: a mistake the catalogue has no name for
    key: str  # which alternative (e.g. "dim=-2", "hides-diagonal-too", "no-out-proj")
    site: Site | None


@dataclass
class Departure:
    """The first checkpoint the student's computation never produced, and where it went instead."""

    stage: str
    site: Site | None


@dataclass
class Finding:
    """What the recogniser saw on one probe."""

    mistakes: list[Mistake] = field(default_factory=list)
    departure: Departure | None = None
    construction: locate.InitDifference | None = None  # constructors that create other tensors
    seeded: bool = False  # the probe uses the parameters as the constructor made them
    parameters: Site | None = None  # where the first projection's parameter was created
    built_at: Site | None = None  # the outermost line that constructed the first module
    failure: Mistake | None = None  # the op the code stopped at, when the probe raised

    @property
    def misconceptions(self) -> list[str]:
        seen: list[str] = []
        for mistake in self.mistakes:
            if mistake.misconception and mistake.misconception not in seen:
                seen.append(mistake.misconception)
        return seen


class Walk:
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
        return self.finder.find(value, STAGES[name].kind, exclude=exclude)

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

    # -- dropout, followed through the student's ops ------------------------------------------------------
    def _dropout_of(self, nodes: tuple[int, ...] | None) -> Op | None:
        if not nodes:
            return None
        live = self.student.live
        for op in self.student.consumers(nodes[0]):
            if op.name in DROPOUT_OPS and any(out in live for out in op.outputs):
                return op
        return None

    def _active(self, op: Op) -> bool:
        before = self.student.nodes[op.inputs[0]].value if op.inputs else None
        after = self.student.nodes[op.outputs[0]].value if op.outputs else None
        if before is not None and after is not None and before.shape == after.shape:
            same = (before == after) | (torch.isnan(before) & torch.isnan(after))
            return not bool(same.all())
        p, training = op.argument(1, "p", 0.5), op.argument(2, "training", True)
        return bool(training) and isinstance(p, (int, float)) and p > 0

    def _reference_drops(self) -> bool:
        dropout = self.instance.dropout
        return dropout is not None and dropout[1] and dropout[0] > 0

    def _follow_dropout(self, name: str) -> None:
        """A dropout applied to checkpoint `name` (not the weights): on the scores or the output."""
        op = self._dropout_of(self.nodes.get(name))
        if op is None or not self._active(op) or not op.outputs:
            return
        value = self.student.nodes[op.outputs[0]].value
        if value is None:
            return
        self.mistakes.append(Mistake(name, "dropout-misplaced", "dropout-on-" + name, op.site))
        self.state[name] = value
        self.nodes[name] = (op.outputs[0],)
        self.on_track = False

    def _dropped(self) -> None:
        weights = self.nodes.get("weights")
        op = self._dropout_of(weights)
        if op is not None and op.outputs and self.student.nodes[op.outputs[0]].value is not None:
            active = self._active(op)
            if active and not self._reference_drops():
                self.mistakes.append(Mistake("dropped", "dropout-misplaced", "active-in-eval", op.site))
            self.state["dropped"] = self.student.nodes[op.outputs[0]].value  # type: ignore[assignment]
            self.nodes["dropped"] = (op.outputs[0],)
            if active:
                self.on_track = False
            return
        if "weights" in self.state:
            self.state["dropped"] = self.state["weights"]
        self.nodes["dropped"] = weights
        if self._reference_drops():
            live = self.student.live
            elsewhere = any(op.name in DROPOUT_OPS and self._active(op) and any(o in live for o in op.outputs)
                            for op in self.student.ops)
            if not elsewhere:
                dead = locate.dead_op(self.student, DROPOUT_OPS, self.call if self.call >= 0 else None)
                site = self._in_call(dead) if dead is not None else locate.frontier(self.student, weights)
                self.mistakes.append(Mistake("dropped", None, "no-dropout", site))
            self.on_track = False

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
        if right is not None and self._unused_right(name) is not None:
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

    def _after_softmax(self) -> bool:
        """The mask left out before the softmax and applied after it (renormalised or not)."""
        for alternative in AFTER_SOFTMAX:
            value = _safely(alternative.fn, self.state, self.ctx)
            nodes = self._find("weights", value)
            if value is None or nodes is None:
                continue
            pending, self.pending_mask = self.pending_mask, None
            if pending in self.mistakes:
                self.mistakes.remove(pending)
            if alternative.misconception:
                masking = self.student.producer(nodes[0])
                self.mistakes.append(Mistake("weights", alternative.misconception, alternative.key,
                                             masking.site if masking else None))
            self._accept("weights", value, nodes, stays_on_track=False)
            return True
        return False

    def _fitted_scaling(self, index: int, name: str) -> bool:
        """Scores divided by some other number: the divisor read off the student's own tensor."""
        base = self.state.get("masked", self.state.get("scores"))
        if base is None or self.ctx.divisor is None:
            return False
        for divisor in self.finder.divisors(base):
            if abs(divisor / self.ctx.divisor - 1) < 1e-3:
                continue
            value = base / divisor
            unscaled = abs(divisor - 1) < 1e-3
            nodes = self._find(name, value, inputs_too=unscaled)
            if nodes is None:
                continue
            alternative = Alternative("unscaled" if unscaled else f"divided-by-{divisor:.4g}",
                                      "missing-scaling" if unscaled else "wrong-scaling", lambda s, c: None,
                                      skip=unscaled)
            if unscaled and not self._confirmed(index, dict(self.state, **{name: value}), nodes):
                continue
            self._mistake(index, name, alternative, nodes)
            self._accept(name, value, nodes, stays_on_track=False)
            return True
        return False

    def _patterns(self, size: int) -> list[torch.Tensor]:
        """The masks the student's code made: square bool, 0/1 or −∞ patterns, cut to `size`, both ways round."""
        found: list[torch.Tensor] = []
        for node in self.student.nodes:
            kind = locate.pattern(node.value)
            if kind in (None, "other", "nothing", "everything") or node.value.shape[-1] < size \
                    or (node.op < 0 and node.origin is None):
                continue  # a triangle the student's own code made (not, say, an identity weight)
            value = node.value
            while value.dim() > 2:
                value = value[0]
            marked = value if value.dtype == torch.bool else (value.double() < -1e4) if bool(
                (value.double() < -1e4).any()) else value != 0
            marked = marked[:size, :size]
            for pattern in (marked, ~marked):
                if not any(torch.equal(pattern, seen) for seen in found):
                    found.append(pattern)
        return found

    def _fitted_mask(self, index: int, name: str) -> bool:
        """A mask of the student's own making applied here: named by what it hides (see
        pipeline.mask_misconception), located where its pattern goes wrong."""
        base = {"masked": self.state.get("scores"), "masked_weights": self.state.get("attention_weights"),
                "mask": self.state.get("mask")}[name]
        if base is None:
            return False
        size = base.shape[-1]
        for hidden in self._patterns(size):
            if not bool(hidden.any()):
                continue  # hiding nothing is leaving the mask out: an alternative that must be confirmed
            if name == "masked":
                value = base.masked_fill(hidden, -torch.inf)
            elif name == "masked_weights":
                value = base * ~hidden
            else:
                value = (~hidden).to(base.dtype)
            nodes = self._find(name, value)
            later = self._lookahead(index, dict(self.state, **{name: value})) if nodes is None else None
            if nodes is None and later is None:
                continue
            misconception = mask_misconception(hidden)
            if misconception == "":
                self._accept(name, value, nodes)
                return True
            producer = self.student.producer((nodes or later)[0])
            site = locate.mask_culprit(self.student, producer) if name != "mask" else None
            self.mistakes.append(Mistake(name, misconception, "own-mask", site or (producer.site if producer else None)))
            self._accept(name, value, nodes, stays_on_track=False)
            return True
        return False

    def _copy(self, name: str) -> bool:
        """Exercise 3.1: what the student wrote into the matrix the reference writes here."""
        op = self.instance.ops.get(name)
        right = self.instance.value(self.reference.trace, name)
        target = _first_tensor(self.reference.trace, op) if op is not None else None
        written = None
        for candidate in self.student.ops:  # the writes into the same matrix, one after the other
            if candidate.name in WRITES and candidate.outputs and target is not None:
                before = _first_tensor(self.student, candidate)
                if before is not None and before.shape == target.shape and close(comparable(before), comparable(target)):
                    written = candidate
                    target = self.student.nodes[candidate.outputs[0]].value
        if written is None and right is not None:
            for candidate in self.student.ops:  # the right matrix, written into another one
                value = self.student.nodes[candidate.outputs[0]].value if candidate.name in WRITES and \
                    candidate.outputs else None
                if value is not None and value.shape == right.shape and close(comparable(value), comparable(right)):
                    self.mistakes.append(Mistake(name, "weights-swapped", "written-elsewhere", candidate.site))
                    self._accept(name, right, None, stays_on_track=False)
                    return True
        if written is None or right is None:
            return self._stage(self.instance.order.index(name), name)
        value = self.student.nodes[written.outputs[0]].value
        if value is None or (value.shape == right.shape and close(comparable(value), comparable(right))):
            self._accept(name, right, (written.outputs[0],))
            return True
        given = {c: v for c in COPIES if (v := self.instance.value(self.reference.trace, c)) is not None}
        for alternative in STAGES[name].alternatives:
            wrong = _safely(alternative.fn, given, self.ctx)
            if wrong is not None and wrong.shape == value.shape and close(comparable(wrong), comparable(value)):
                self.mistakes.append(Mistake(name, alternative.misconception, alternative.key, written.site))
                self._accept(name, wrong, (written.outputs[0],), stays_on_track=False)
                return True
        self.departure = Departure(name, written.site)
        return False

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

    def _site(self, index: int, name: str, alternative: Alternative, nodes: tuple[int, ...] | None) -> Site | None:
        trace = self.student
        producer = trace.producer(nodes[0]) if nodes else None
        if name in MASK_STAGES and alternative.key in MASKS and alternative.key != "hides-nothing":
            return locate.mask_culprit(trace, producer) or (producer.site if producer else None)
        if alternative.skip:
            dead = locate.dead_op(trace, SKIPPED_OPS.get(name, set()), self.call if self.call >= 0 else None)
            if dead is not None:
                return self._in_call(dead)
            if index == len(self.instance.order) - 1 and nodes and self._returned_at(nodes) is not None:
                return self._returned_at(nodes)  # the value went out as it was: the return statement
            return locate.frontier(trace, nodes, self._known) or (producer.site if producer else None)
        if STAGES[name].kind == ORDERED and nodes:
            return producer.site if producer is not None else None
        if producer is not None:
            return producer.site
        previous = self.instance.order[index - 1] if index else None
        return locate.frontier(trace, self.nodes.get(previous), self._known) if previous else None

    def _returned_at(self, nodes: tuple[int, ...]) -> Site | None:
        if not 0 <= self.call < len(self.student.calls):
            return None
        call = self.student.calls[self.call]
        if call.returned and call.file and self._is_result(nodes):
            return Site(call.file, call.returned, call.function)
        return None

    def _in_call(self, op: Op) -> Site:
        """The op's line in the function of the call (a helper's line is where the helper was called)."""
        if 0 <= self.call < len(self.student.calls):
            function = self.student.calls[self.call].function
            for frame in op.stack:
                if frame.function == function:
                    return frame
        return op.site

    def _known(self, node) -> bool:
        """Whether a student's tensor is one the reference computed too (in the matching call)."""
        if node.value is None:
            return False
        if self._reference_finder is None:
            self._reference_finder = Finder(self.reference.trace, call_nodes(self.reference.trace, self.instance.call))
        return self._reference_finder.find(node.value, "free", sliced=False) is not None

    def _unused_right(self, name: str) -> Site | None:
        """The stage's right value computed by the student but never used (a dead tensor)."""
        right = self._right(name, self.state, self.on_track)
        if right is None or not 0 <= self.call < len(self.student.calls):
            return None
        dead = call_nodes(self.student, self.call) - self.student.live
        found = Finder(self.student, dead).find(right, STAGES[name].kind) if dead else None
        producer = self.student.producer(found[0]) if found else None
        return self._in_call(producer) if producer is not None else None

    def _depart(self, index: int, name: str) -> None:
        order = self.instance.order
        previous = next((self.nodes[n] for n in reversed(order[:index]) if self.nodes.get(n)), None)
        if name in PROJECTIONS and self.instance.seeded:
            self.departure = Departure("parameters", self._projection_site())  # the constructor's own parameters
            return
        site = self._unused_right(name)
        if site is None and name in PROJECTIONS:
            site = self._projection_op()
        if site is None and previous:
            dead = [op for op in self.student.consumers(previous[0]) if op.name not in locate.LAYOUT_OPS
                    and op.outputs and not any(out in self.student.live for out in op.outputs)]
            if dead:
                site = self._in_call(dead[0])  # what should have come next was computed, then dropped
        if site is None and previous and STAGES[name].kind == ORDERED:
            site = locate.last_rearrangement(self.student, previous)
        if site is None:
            start = previous or self._call_inputs()
            site = locate.frontier(self.student, start, self._known) if start else None
        self.departure = Departure(name, site)

    def _call_inputs(self) -> tuple[int, ...] | None:
        if not 0 <= self.call < len(self.student.calls):
            return None
        nodes = tuple(a.node for a in self.student.calls[self.call].args.values() if isinstance(a, Ref) and a.node >= 0)
        return nodes or None

    def _projection_op(self) -> Site | None:
        """The student's projection that differs from the reference's at the same position (the
        ops that compute from the call's input, in order), or one whose result nobody used."""
        inputs = self._call_inputs()
        if not inputs:
            return None
        ours = [self.instance.ops[p] for p in self.instance.order if p in PROJECTIONS]
        theirs = [op for op in self.student.consumers(inputs[0]) if op.name not in locate.LAYOUT_OPS and op.outputs]
        for mine, op in zip(ours, theirs):
            want = self.reference.trace.nodes[mine.outputs[0]].value if mine.outputs else None
            got = self.student.nodes[op.outputs[0]].value
            if want is None or got is None or want.shape != got.shape or not close(comparable(want), comparable(got)):
                return op.site
        for op in theirs:
            if not any(out in self.student.live for out in op.outputs):
                return op.site
        return None

    def _projection_site(self) -> Site | None:
        """The first projection of the student's forward: the line creating its parameter, else its own."""
        for op in self.student.ops:
            if op.name in ("linear", "matmul", "einsum", "mm", "bmm") \
                    and not any(frame.function == "__init__" for frame in op.stack):
                return locate.parameter_origin(self.student, op) or op.site
        return None


def failure(student: Trace) -> Mistake | None:
    """The op an error stopped at; named when it is a softmax (or a naive softmax's sum) asked for a
    dimension its input does not have."""
    op = student.failed
    if op is None:
        return None
    misconception = None
    if op.name in ("softmax", "log_softmax", "sum") and op.inputs:
        dim = op.kwargs.get("dim", op.args[1] if len(op.args) > 1 else None)
        rank = len(student.nodes[op.inputs[0]].shape)
        producer = student.producer(op.inputs[0])
        naive = op.name == "sum" and producer is not None and producer.name == "exp"
        if type(dim) is int and not -max(rank, 1) <= dim < max(rank, 1) and (op.name != "sum" or naive):
            misconception = "softmax-wrong-dim"
    return Mistake("weights" if misconception else "error", misconception, "failed-op", op.site)


def _safely(fn, state: State, ctx: Context) -> torch.Tensor | None:
    """A stage's value from the student's own (perhaps ill-shaped) values; None when it cannot be computed."""
    try:
        value = fn(state, ctx)
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    return value if isinstance(value, torch.Tensor) else None


def _first_tensor(trace: Trace, op: Op) -> torch.Tensor | None:
    for argument in list(op.args) + list(op.kwargs.values()):
        if isinstance(argument, Ref) and argument.node >= 0:
            return trace.nodes[argument.node].value
    return None


def align_calls(reference: Trace, student: Trace) -> dict[int, int]:
    """The student's call that matches each of the reference's: the probe makes the same calls in
    the same order (imports left aside); a probe that stopped with an error made fewer."""
    ours = [call.index for call in reference.calls if call.function != "<module>"]
    theirs = [call.index for call in student.calls if call.function != "<module>"]
    return dict(zip(ours, theirs))


def call_nodes(trace: Trace, call: int) -> set[int]:
    nodes: set[int] = set()
    for op in trace.ops:
        if op.call == call:
            nodes.update(op.inputs)
            nodes.update(op.outputs)
    return nodes


def analyse(reference: Reference, student: Trace) -> Finding:
    """Walk every reference instance of a probe through the student's trace (the matching call's
    tensors when the calls line up, all of them otherwise), and compare their constructors."""
    calls = align_calls(reference.trace, student)
    finders: dict[int, Finder] = {}
    finding = Finding(construction=locate.init_difference(reference.trace, student),
                      seeded=any(instance.seeded for instance in reference.instances),
                      built_at=locate.built_at(student), failure=failure(student))
    for instance in reference.instances:
        call = calls.get(instance.call)
        if call is None:
            continue  # the student's probe stopped before this call
        if call not in finders:
            finders[call] = Finder(student, call_nodes(student, call) & student.live)
        walk = Walk(reference, instance, student, finders[call], call)
        walk.run()
        if instance.seeded and finding.parameters is None:
            finding.parameters = walk._projection_site()
        known = {(m.stage, m.misconception, m.key) for m in finding.mistakes}
        finding.mistakes += [m for m in walk.mistakes if (m.stage, m.misconception, m.key) not in known]
        if walk.departure is not None and finding.departure is None:
            finding.departure = walk.departure
    return finding
