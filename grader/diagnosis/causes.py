"""The causes of one failing test (error pattern, the student's traces, a known-buggy variant,
behaviour signatures), the checkpoint where its values first depart and the student's line there
(`Diagnoser.diagnose_submission` asks, test by test).

Every diagnosis carries its line when one is known, an exception's included: the line the
recogniser found, else (for a cause an exception names) the exception's own line in the student's
code, else (a constructor refusing a keyword of the contract, raised before any line of theirs
runs) the constructor's `def __init__` (`keywords`); for a check of parameter or buffer names, the
constructor statement that assigns another name than the reference's (`attribute_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from grader.diagnosis.blame import BUILDERS
from grader.diagnosis.catalogue.misconceptions import CATALOGUE
from grader.diagnosis.catalogue.signatures import configuration_differs, signatures
from grader.diagnosis.catalogue.variants import VariantRun
from grader.diagnosis.evidence import Evidence, Found
from grader.diagnosis.source.attribute_names import differing_names, missing_attribute_line, names_line
from grader.diagnosis.source.fixed_sizes import fixed_size_line
from grader.diagnosis.source.keywords import caller_misnamed, constructor, named_otherwise
from grader.diagnosis.source.quotes import frame
from grader.probe_outputs import ProbeOutputs
from grader.records import Diagnosis, StudentFrame, TestOutcome


def diagnosed_test(
    outcome: TestOutcome,
    outcomes: list[TestOutcome],
    pattern: str | None,
    run: VariantRun | None,
    reference: ProbeOutputs,
    student: ProbeOutputs,
    evidence: Evidence,
    *,
    moved: bool,
    relies: bool,
    sources: Mapping[str, str],
) -> TestOutcome:
    """One failing test with its causes, checkpoint and line: `pattern` is the error pattern its
    exception matches, `run` the known-buggy variant its outputs equal; `moved`: blame moved it to
    its own module; `relies`: it departs where the tests it relies on do."""
    if pattern == "qkv-bias-ignored" and named_otherwise(outcome, sources):
        pattern = None  # the class takes the setting, under another name than the contract's
    fixed = fixed_size_line(outcome, sources) if pattern == "hardcoded-shape" else None
    if pattern == "hardcoded-shape" and sources and fixed is None:
        pattern = None  # the telltale message, but no size fixed (a view's arguments swapped)
    found = evidence.for_outcome(outcome, outcomes)
    variant = run.variant.id if run is not None else None
    if variant == "wrong-init" and evidence.computes_otherwise(outcome.module, outcomes):
        variant = None  # the variant computes the reference's values with given weights; this module does not
    named = _named(outcome, pattern, variant, run, found, moved)
    if not relies and outcome.error is None and not named:
        named += signatures(outcome, student, reference)
        if (
            outcome.module in BUILDERS
            and evidence.healthy(outcome)
            and configuration_differs(outcome, student, reference)
        ):
            named.append("wrong-config")
    named = [m for m in dict.fromkeys(named) if m in CATALOGUE]
    location, signature = _location(outcome, found, named, sources)
    if fixed is not None and location is not None and named == ["hardcoded-shape"]:
        location = frame(location.file, fixed, location.function, sources)  # where the size is fixed
    names = differing_names(outcome, student, reference) if outcome.error is None else None
    within = location if location is not None and location.function == "__init__" else found.constructed_at
    if names is not None and within is not None:
        line = names_line(within, names, sources)  # a check of names: the statement that names another
        location = frame(within.file, line, "__init__", sources) if line is not None else location
    diagnosis = outcome.diagnosis
    if named or found.checkpoint or location:
        checkpoint = found.checkpoint_of(named[0]) if named else found.checkpoint or signature
        checkpoint = checkpoint or ("parameters" if names is not None and location is not None else None)
        kind = _kind(outcome, found, named, variant, bool(pattern or moved))
        diagnosis = Diagnosis(tuple(named), checkpoint, location, kind)
    return replace(outcome, misconception=named[0] if named else None, diagnosis=diagnosis)


def _named(
    outcome: TestOutcome, pattern: str | None, variant: str | None, run: VariantRun | None, found: Found, moved: bool
) -> list[str]:
    """The causes the test's own evidence names: a builder moved here by blame (its only task is
    the configuration), the error pattern, the student's own values, then a variant of its module."""
    named: list[str] = []
    if moved and outcome.module in BUILDERS:
        named.append("wrong-config")  # a builder's only task is the configuration
    if pattern:
        named.append(pattern)
    named += found.misconceptions  # the student's own values say it
    elsewhere = run is not None and outcome.module not in run.variant.modules  # a mistake of a module it uses
    if variant and not found.misconceptions and not elsewhere:
        named.append(variant)  # else a variant equal on few, small outputs is the weaker evidence
    return named


def _kind(outcome: TestOutcome, found: Found, named: list[str], variant: str | None, by_error: bool) -> str:
    """What the diagnosis rests on: "error", "variant", the trace's kind, or "behaviour"."""
    if not named:
        return found.kind or ("error" if outcome.error is not None else "")
    if by_error:
        return "error"
    if variant == named[0] and variant not in found.misconceptions:
        return "variant"
    return found.kind or "behaviour"


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
