"""The reference's checkpoints: named intermediate values of its pipeline, read from its own trace.

The reference solutions declare their checkpoints where they compute them, in a comment on the line:
`[checkpoint: scores]` names the value of the last op of that line, `[checkpoint: div=scaled,
softmax=weights]` names the values of its div and softmax ops. A reference trace of a probe (run
here, in the trusted process: it is our own code) is cut into `Instance`s, one pass through the
pipeline each (one call of a forward, one head of the wrapper...), in the order the reference runs
them; each instance knows its checkpoint values and the `Context` the pipeline's stages need.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache

import torch
import torch.nn.functional as F

from grader.diagnosis.source.init_methods import SOLUTIONS_DIR
from grader.diagnosis.trace.documents import Op, Ref, Trace, parse_trace
from grader.diagnosis.walk.pipeline import Context, stage_order
from grader.intake.lines import source_lines
from grader.probes import PROBES, load_all
from grader.probes.tracer import traced
from grader.reference_code import ModuleNamespace
from grader.sandbox.driver import run_probe

DECLARATION = re.compile(r"\[checkpoint: ([\w=, ]+)\]")
STARTS = {"concat"}  # checkpoints that begin a pass of their own (the wrapper joins finished heads)
DROPOUT_OPS = frozenset(
    {
        "dropout",
        "dropout_",
        "native_dropout",
        "feature_dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
    }
)


@cache
def declarations() -> dict[tuple[str, int], dict[str, str]]:
    """(file, line) -> {op name or "": checkpoint} for every declared checkpoint of the solutions."""
    found: dict[tuple[str, int], dict[str, str]] = {}
    for path in sorted(SOLUTIONS_DIR.glob("*.py")):
        for number, text in enumerate(source_lines(path.read_text(encoding="utf-8")), start=1):
            match = DECLARATION.search(text)
            if not match:
                continue
            names: dict[str, str] = {}
            for part in match.group(1).split(","):
                op, _, name = part.strip().rpartition("=")
                names[op] = name
            found[(path.name, number)] = names
    return found


@dataclass
class Instance:
    """One pass of the reference through (part of) the pipeline."""

    call: int
    checkpoints: dict[str, int] = field(default_factory=dict)  # checkpoint -> node of the reference trace
    ops: dict[str, Op] = field(default_factory=dict)  # checkpoint -> the op that made it
    order: list[str] = field(default_factory=list)
    context: Context = field(default_factory=Context)
    seeds: dict[str, torch.Tensor] = field(default_factory=dict)  # inputs of the first stages
    dropout: tuple[float, bool] | None = None  # the reference's dropout (p, training) in this pass
    seeded: bool = False  # its projections use the parameters as the constructor made them

    def value(self, trace: Trace, name: str) -> torch.Tensor | None:
        node = self.checkpoints.get(name)
        return None if node is None else trace.nodes[node].value


def label(trace: Trace) -> dict[int, str]:
    """node -> checkpoint, for the nodes the reference's declarations name."""
    declared = declarations()
    labels: dict[int, str] = {}
    runs: list[list[Op]] = []
    for op in trace.ops:
        site = op.site
        if runs and runs[-1][-1].site == site and runs[-1][-1].call == op.call:
            runs[-1].append(op)
        else:
            runs.append([op])
    for run in runs:
        names = declared.get((run[0].site.file, run[0].site.line))
        if not names:
            continue
        for op_name, checkpoint in names.items():
            chosen = [op for op in run if op.name == op_name] if op_name else run
            if chosen and chosen[-1].outputs:
                labels[chosen[-1].outputs[0]] = checkpoint
    return labels


def instances(trace: Trace) -> list[Instance]:
    """The reference trace cut into passes through the pipeline, in the order they ran."""
    labels = label(trace)
    found: list[Instance] = []
    current: Instance | None = None
    for op in trace.ops:
        for node in op.outputs:
            name = labels.get(node)
            if name is None:
                continue
            last = current.order[-1] if current and current.order else None
            if (
                current is None
                or current.call != op.call
                or name in current.checkpoints
                or name in STARTS
                or (last is not None and stage_order(name) < stage_order(last))
            ):
                current = Instance(op.call)
                found.append(current)
            current.checkpoints[name] = node
            current.ops[name] = op
            current.order.append(name)
    for instance in found:
        _describe(trace, instance)
    return found


def _value(trace: Trace, argument: object) -> torch.Tensor | None:
    return trace.nodes[argument.node].value if isinstance(argument, Ref) and argument.node >= 0 else None


def _describe(trace: Trace, instance: Instance) -> None:
    """The instance's context (mask, divisor, sizes, out_proj, dropout) and the inputs of its first stages."""
    ctx = instance.context
    ops = instance.ops
    value = lambda name: instance.value(trace, name)  # noqa: E731
    if "masked" in ops:
        scores = _value(trace, ops["masked"].args[0]) if ops["masked"].args else None
        masked = value("masked")
        if scores is not None and masked is not None and scores.shape == masked.shape:
            hidden = torch.isinf(masked) & ~torch.isinf(scores)
            while hidden.dim() > 2:
                hidden = hidden.any(dim=0)
            ctx.hidden = hidden
            instance.seeds.setdefault("scores", scores)
    if "scaled" in ops and ops["scaled"].args:
        base, scaled = _value(trace, ops["scaled"].args[0]), value("scaled")
        number = ops["scaled"].args[1] if len(ops["scaled"].args) > 1 else None
        if ops["scaled"].name == "div" and type(number) in (int, float) and number:
            ctx.divisor = float(number)
        elif base is not None and scaled is not None and base.shape == scaled.shape:
            finite = torch.isfinite(base) & torch.isfinite(scaled) & (scaled.abs() > 1e-12)
            if bool(finite.any()):
                ctx.divisor = float((base[finite].double() / scaled[finite].double()).median())
        if base is not None:
            instance.seeds.setdefault("masked" if "masked" in ops else "scores", base)
    for name in ("split_queries", "split_keys", "split_values"):
        split = value(name)
        if split is not None and split.dim() == 4:
            ctx.heads, ctx.head_dim = int(split.shape[1]), int(split.shape[3])
    if "output" in ops and ops["output"].name == "linear":
        weight = _value(trace, ops["output"].argument(1, "weight"))
        bias = _value(trace, ops["output"].argument(2, "bias"))
        if weight is not None:
            ctx.out_proj = lambda merged, w=weight, b=bias: F.linear(
                merged, w.to(merged.dtype), None if b is None else b.to(merged.dtype)
            )
    for name in ("queries", "keys", "values"):
        op = ops.get(name)
        x = _value(trace, op.args[0]) if op is not None and op.args else None
        if x is not None:
            ctx.sizes["d_in"] = int(x.shape[-1])
    merged = value("merged")
    if merged is not None:
        ctx.sizes["d_out"] = int(merged.shape[-1])
    if "context" in ops and len(ops["context"].args) >= 2:
        values = _value(trace, ops["context"].args[1])
        if values is not None and "values" not in instance.checkpoints:
            instance.seeds.setdefault("values", values)
        weights = _value(trace, ops["context"].args[0])
        if weights is not None and "weights" not in instance.checkpoints:
            instance.seeds.setdefault("weights", weights)
    if "masked_weights" in ops and ops["masked_weights"].args:
        weights = _value(trace, ops["masked_weights"].args[0])
        if weights is not None:
            instance.seeds["attention_weights"] = weights
    if "concat" in ops and ops["concat"].args and isinstance(ops["concat"].args[0], tuple):
        outputs = [_value(trace, a) for a in ops["concat"].args[0]]
        heads = [h for h in outputs if h is not None]
        if heads and len(heads) == len(outputs) and all(h.shape == heads[0].shape for h in heads):
            instance.seeds["heads"] = torch.stack(heads)
    if instance.order and instance.order[0] == "weights" and "scaled" not in instance.seeds:
        call = trace.calls[instance.call] if 0 <= instance.call < len(trace.calls) else None
        weights = value("weights")
        inputs = [_value(trace, a) for a in call.args.values()] if call else []
        for x in inputs:
            if x is not None and weights is not None and x.shape == weights.shape:
                instance.seeds["scaled"] = x  # softmax_naive(x): the logits are its argument
    instance.seeded = any(_constructed(trace, ops[name]) for name in ("queries", "keys", "values") if name in ops)
    if "dropped" in ops:
        op = ops["dropped"]
        p, training = op.argument(1, "p", 0.5), op.argument(2, "training", True)
        if op.name in DROPOUT_OPS and isinstance(p, (int, float)) and isinstance(training, bool):
            instance.dropout = (float(p), training)


def _constructed(trace: Trace, op: Op) -> bool:
    """Whether `op` uses a parameter exactly as an earlier call (the constructor) made it."""
    for node in op.inputs:
        leaf = trace.nodes[node]
        if leaf.op >= 0 or leaf.origin is None or leaf.value is None:
            continue
        origin = trace.nodes[leaf.origin]
        if (
            origin.op >= 0
            and trace.ops[origin.op].call != op.call
            and origin.value is not None
            and origin.value.shape == leaf.value.shape
            and torch.equal(origin.value, leaf.value)
        ):
            return True
    return False


@dataclass
class Reference:
    """A probe's reference trace and its instances."""

    trace: Trace
    instances: list[Instance]


@cache
def reference(probe: str) -> Reference:
    """The reference's trace of `probe`, labelled (run once per process: it never changes)."""
    load_all()
    record = traced(run_probe, PROBES[probe], ModuleNamespace("solutions"), str(SOLUTIONS_DIR))
    trace = parse_trace(record["trace"])
    return Reference(trace, instances(trace))


def solution_file(module: str) -> str:
    return os.path.join(str(SOLUTIONS_DIR), f"{module}.py")
