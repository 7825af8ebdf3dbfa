"""The diagnosis of one submission (`Diagnoser.diagnose_submission`): blame, then for each failing
test its causes (error pattern, the student's traces, a known-buggy variant, behaviour signatures),
the checkpoint where its values first depart and the student's line there.

Every diagnosis carries its line when one is known, an exception's included: the line the
recogniser found, else (for a cause an exception names) the exception's own line in the student's
code, else (a constructor refusing a keyword of the contract, raised before any line of theirs
runs) the constructor's `def __init__` (`keywords`); for a check of parameter or buffer names, the
constructor statement that assigns another name than the reference's (`attribute_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from grader.diagnosis.blame import BUILDERS, decide_blame, dependencies_pass, located_in_own_module
from grader.diagnosis.catalogue.misconceptions import CATALOGUE
from grader.diagnosis.catalogue.signatures import (
    bias_charged_to_class,
    class_mishandles_bias,
    configuration_differs,
    signatures,
)
from grader.diagnosis.consolidate import consolidate
from grader.diagnosis.evidence import Evidence, Found
from grader.diagnosis.source.attribute_names import differing_names, missing_attribute_line, names_line
from grader.diagnosis.source.fixed_sizes import fixed_size_line
from grader.diagnosis.source.keywords import caller_misnamed, constructor, named_otherwise
from grader.diagnosis.source.quotes import frame
from grader.diagnosis.trace_plan import departs_where_it_relies, trace_plan
from grader.probe_outputs import ProbeOutputs
from grader.records import Diagnosis, StudentFrame, TestOutcome

if TYPE_CHECKING:
    from grader.diagnosis import Diagnoser


def diagnose_submission(
    diagnoser: Diagnoser,
    outcomes: list[TestOutcome],
    student: ProbeOutputs,
    uses: Mapping[str, tuple[str, ...]] | None = None,
    sources: Mapping[str, str] | None = None,
    traces: Mapping[str, Any] | None = None,
    shared: Mapping[str, str] | None = None,
) -> list[TestOutcome]:
    """See `Diagnoser.diagnose_submission`."""
    uses = uses or {}
    outcomes, moved = decide_blame(outcomes, uses)
    healthy = dependencies_pass(outcomes, uses)
    if traces and shared is None:
        shared = trace_plan(diagnoser, outcomes, student, uses, sources)[1]
    evidence = Evidence(
        traces or {} if diagnoser.traced else {},
        sources or {} if diagnoser.traced else {},
        healthy,
        diagnoser.findings,
        shared if diagnoser.traced else None,
        lambda module: class_mishandles_bias(module, student, diagnoser.reference),
    )
    untraced: list[int] = []  # left untraced as they rely on a broken section (`trace_plan`)
    charged: list[int] = []  # blocked by the class they configure (`bias_charged_to_class`)
    for index, outcome in enumerate(outcomes):  # each replaced by its diagnosed self, in order
        if outcome.status == "passed" or outcome.blocked_by:
            continue
        owner = bias_charged_to_class(outcome, outcomes, student, diagnoser.reference)
        if owner is not None:  # the class's own tests name it; charged there, once
            outcomes[index] = replace(outcome, blocked_by=owner, misconception=None)
            charged.append(index)
            continue
        if diagnoser.traced and departs_where_it_relies(diagnoser, outcome, outcomes, student, uses, sources):
            untraced.append(index)  # that section's own tests name the cause
        outcomes[index] = _diagnosed(
            diagnoser, outcome, outcomes, student, evidence, outcome.id in moved, index in untraced, sources or {}
        )
    outcomes = consolidate(outcomes)
    for index in untraced:  # the line the tests it relies on found, in their own module
        relied = located_in_own_module(uses.get(outcomes[index].id, ()), outcomes)
        if outcomes[index].diagnosis is None and relied is not None:
            outcomes[index] = replace(outcomes[index], diagnosis=relied.diagnosis)
    for index in charged:  # the diagnosis the class's own tests found
        owner = outcomes[index].blocked_by
        own = [o for o in outcomes if o.module == owner and o.status != "passed" and not o.blocked_by]
        relied = next((o for o in own if o.diagnosis is not None and o.diagnosis.location is not None), None)
        if outcomes[index].diagnosis is None and relied is not None:
            outcomes[index] = replace(outcomes[index], diagnosis=relied.diagnosis)
    return outcomes


def _diagnosed(
    diagnoser: Diagnoser,
    outcome: TestOutcome,
    outcomes: list[TestOutcome],
    student: ProbeOutputs,
    evidence: Evidence,
    moved: bool,
    relies: bool,
    sources: Mapping[str, str],
) -> TestOutcome:
    """One failing test with its causes, checkpoint and line."""
    named: list[str] = []
    pattern = diagnoser.pattern(outcome)
    if pattern == "qkv-bias-ignored" and named_otherwise(outcome, sources):
        pattern = None  # the class takes the setting, under another name than the contract's
    fixed = fixed_size_line(outcome, sources) if pattern == "hardcoded-shape" else None
    if pattern == "hardcoded-shape" and sources and fixed is None:
        pattern = None  # the telltale message, but no size fixed (a view's arguments swapped)
    if moved and outcome.module in BUILDERS:
        named.append("wrong-config")  # a builder's only task is the configuration
    if pattern:
        named.append(pattern)
    found = evidence.for_outcome(outcome, outcomes)
    named += found.misconceptions  # the student's own values say it
    run = diagnoser.variant_run(outcome, student) if outcome.probes else None
    variant = run.variant.id if run is not None else None
    elsewhere = run is not None and outcome.module not in run.variant.modules  # a mistake of a module it uses
    if variant == "wrong-init" and evidence.computes_otherwise(outcome.module, outcomes):
        variant = None  # the variant computes the reference's values with given weights; this module does not
    if variant and not found.misconceptions and not elsewhere:
        named.append(variant)  # else a variant equal on few, small outputs is the weaker evidence
    if not relies and outcome.error is None and not named:
        named += signatures(outcome, student, diagnoser.reference)
        if (
            outcome.module in BUILDERS
            and evidence.healthy(outcome)
            and configuration_differs(outcome, student, diagnoser.reference)
        ):
            named.append("wrong-config")
    named = [m for m in dict.fromkeys(named) if m in CATALOGUE]
    location, signature = _location(outcome, found, named, sources)
    if fixed is not None and location is not None and named == ["hardcoded-shape"]:
        location = frame(location.file, fixed, location.function, sources)  # where the size is fixed
    names = differing_names(outcome, student, diagnoser.reference) if outcome.error is None else None
    within = location if location is not None and location.function == "__init__" else found.constructed_at
    if names is not None and within is not None:
        line = names_line(within, names, sources)  # a check of names: the statement that names another
        location = frame(within.file, line, "__init__", sources) if line is not None else location
    evidence_kind = (
        "error"
        if pattern or moved
        else "variant"
        if variant == (named[0] if named else None) and variant not in found.misconceptions
        else found.kind or "behaviour"
    )
    kind = evidence_kind if named else found.kind or ("error" if outcome.error is not None else "")
    diagnosis = outcome.diagnosis
    if named or found.checkpoint or location:
        checkpoint = found.checkpoint_of(named[0]) if named else found.checkpoint or signature
        checkpoint = checkpoint or ("parameters" if names is not None and location is not None else None)
        diagnosis = Diagnosis(tuple(named), checkpoint, location, kind)
    return replace(outcome, misconception=named[0] if named else None, diagnosis=diagnosis)


def _location(
    outcome: TestOutcome, found: Found, named: list[str], sources: Mapping[str, str]
) -> tuple[StudentFrame | None, str | None]:
    """The student's line of the diagnosis (see the module's docstring), and "signature" when it is
    a constructor's `def __init__` that refused a keyword of the contract."""
    location = found.location_of(named[0]) if named else found.location
    error = outcome.error
    if location is None and error is not None and named:
        location = error.location
    if location is None and error is not None and error.location is not None and caller_misnamed(outcome):
        return error.location, None  # a keyword the contract does not name: the call that gives it
    if location is None and error is not None:
        refused = constructor(outcome, sources)
        if refused is not None:
            return refused[0], "signature"
        missing = missing_attribute_line(outcome, sources)
        if missing is not None:
            return missing, "parameters"
    return location, None
