"""The recogniser: where a student's computation departs from the reference's, and why.

`analyse(reference, student)` walks every pass of the reference through the pipeline (see
`grader.diagnosis.walk.walker`) through the student's trace of the same probe, compares the constructors
(`constructors.init_difference`) and reads the op an error stopped at. Every finding carries the
student's line.
"""

from __future__ import annotations

from grader.diagnosis.trace import constructors
from grader.diagnosis.trace.documents import Trace
from grader.diagnosis.walk.checkpoints import Reference
from grader.diagnosis.walk.findings import Departure, Finding, Mistake, align_calls, call_nodes
from grader.diagnosis.walk.layout import Finder
from grader.diagnosis.walk.pipeline import stage_order
from grader.diagnosis.walk.progress import Progress
from grader.diagnosis.walk.sites import projection_site
from grader.diagnosis.walk.walker import Walk

__all__ = ["Departure", "Finding", "Mistake", "align_calls", "analyse", "call_nodes", "failure"]


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


def analyse(reference: Reference, student: Trace) -> Finding:
    """Walk every reference instance of a probe through the student's trace (the matching call's
    tensors when the calls line up, all of them otherwise), and compare their constructors.

    The instances of one function are one computation on several inputs: a mistake that an
    instance's look-ahead inferred (not seen in the student's tensors: on a short sequence two
    wrong steps may give the right numbers) counts only if no more instances of that function
    depart before the mistake's step than infer it."""
    calls = align_calls(reference.trace, student)
    finders: dict[int, Finder] = {}
    finding = Finding(
        construction=constructors.init_difference(reference.trace, student),
        seeded=any(instance.seeded for instance in reference.instances),
        built_at=constructors.built_at(student),
        constructed_at=constructors.constructed_at(student),
        failure=failure(student),
    )
    walks: list[tuple[str, Progress]] = []
    for instance in reference.instances:
        call = calls.get(instance.call)
        if call is None:
            continue  # the student's probe stopped before this call
        if call not in finders:
            finders[call] = Finder(student, call_nodes(student, call) & student.live)
        walked = Walk(reference, instance, student, finders[call], call).run()
        walks.append((_function(reference, instance), walked))
        if instance.seeded and finding.parameters is None:
            finding.parameters = projection_site(student)
    for function, walked in walks:
        known = {(m.stage, m.misconception, m.key) for m in finding.mistakes}
        finding.mistakes += [
            m
            for m in walked.mistakes
            if (m.stage, m.misconception, m.key) not in known and (not m.inferred or _agreed(m, function, walks))
        ]
        if walked.departure is not None and finding.departure is None:
            finding.departure = _departure(walked.departure, finding)
    return finding


def _agreed(mistake: Mistake, function: str, walks: list[tuple[str, Progress]]) -> bool:
    """An inferred mistake that at least as many instances of its function infer as depart before its step."""
    same = [w for f, w in walks if f == function]
    seen = sum(
        any(
            (m.stage, m.misconception, m.key) == (mistake.stage, mistake.misconception, mistake.key) for m in w.mistakes
        )
        for w in same
    )
    earlier = sum(w.departure is not None and stage_order(w.departure.stage) < stage_order(mistake.stage) for w in same)
    return seen >= earlier


def _function(reference: Reference, instance) -> str:
    calls = reference.trace.calls
    return calls[instance.call].function if 0 <= instance.call < len(calls) else ""


def _departure(departure: Departure, finding: Finding) -> Departure:
    """A departure at the parameters of a seeded run whose constructors create the very tensors the
    reference's do (so the parameters are the book's): it is the forward's use of them that departs,
    at the projection the walk did not find."""
    if departure.stage == "parameters" and finding.construction is None and departure.projection:
        return Departure(departure.projection, departure.forward or departure.site)
    return departure
