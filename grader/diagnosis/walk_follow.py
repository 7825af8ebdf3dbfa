"""The walk's special followers: dropout (followed through the student's own ops), the mask applied
after the softmax, divisors and masks read off the student's own tensors, Exercise 3.1's copies."""
from __future__ import annotations

import torch

from grader.diagnosis import locate
from grader.diagnosis.checkpoints import DROPOUT_OPS
from grader.diagnosis.findings import WRITES, Departure, Mistake, _first_tensor, _safely
from grader.diagnosis.layout import close, comparable
from grader.diagnosis.pipeline import AFTER_SOFTMAX, COPIES, STAGES, Alternative, mask_misconception
from grader.diagnosis.trace_documents import Op


class Following:
    """Mixed into `grader.diagnosis.walk.Walk`."""

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
            if kind in (None, "nothing", "everything") or node.value.shape[-1] < size \
                    or (node.op < 0 and node.origin is None):
                continue
            origin = locate._node_origin(self.student, node.index)
            if origin is None or origin.name in locate.PARAMETER_INIT:
                continue  # a mask the student's own code made (not, say, an identity weight)
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

