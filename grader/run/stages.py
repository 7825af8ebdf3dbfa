"""The stages of grading one submission, in order, each a function of records that returns new ones:

1. `probe_outputs`, `outcomes`: the hidden suites on the sandbox's probe outputs -> one TestOutcome per test;
2. `trace_plan`: which failing probes the sandbox should run again under the tracer;
3. `with_diagnoses`: a missing module named as such, blame, the misconceptions and the student's line
   (from the traces, when there are some), blame on earlier sections, cells of notebooks;
4. `grade_result`: each test's message, the heatmaps, the integrity notes and the scores -> GradeResult.

Whatever one submission's data provokes in a stage costs that submission only: a failed diagnosis,
message or heatmap leaves its part out of the report and says so (`grader.partial`); a failed stage
otherwise makes `failed_result` (every test an error, and a note).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

import torch

from grader.diagnosis import Diagnoser
from grader.diagnosis.blame import attribute_to_earlier_sections
from grader.diagnosis.source.quotes import quoted
from grader.i18n import Catalog
from grader.intake.contract import CLASSES, OWNER, REQUIRED
from grader.intake.notebook_cells import in_notebook_terms, message_in_notebook_terms
from grader.intake.printable import printable
from grader.probe_outputs import ProbeOutputs
from grader.probes import BOOK_TOKENS
from grader.records import GradeResult, Heatmap, IntegrityNote, ProbeError, SectionScore, Submission, TestOutcome
from grader.report.messages import outcome_message
from grader.report.sentences import words
from grader.sandbox.runs import SandboxRun
from grader.suites.hidden_suites import HiddenSuites, SuiteItem

log = logging.getLogger("grader.run")


@dataclass(frozen=True)
class Graded:
    """A submission's grade run and the suites' outcomes on its outputs."""

    run: SandboxRun
    outputs: ProbeOutputs
    outcomes: tuple[TestOutcome, ...]

    @property
    def submission(self) -> Submission:
        return self.run.submission


@dataclass(frozen=True)
class TracePlan:
    probes: tuple[str, ...] = ()  # to run again, traced
    shared: dict[str, str] | None = None  # probe -> the traced probe whose trace stands for it


# -- 1. the hidden suites -------------------------------------------------------------------------


def probe_outputs(run: SandboxRun) -> ProbeOutputs:
    return ProbeOutputs(screened(run.results))


def outcomes(run: SandboxRun, outputs: ProbeOutputs, suites: HiddenSuites, reference: ProbeOutputs) -> Graded:
    return Graded(run, outputs, suites.run(outputs, reference))


def screened(results: dict) -> dict:
    """A child's errors never speak as the grader: an error that claims to be the grader's own
    (kind or key "internal") is a rejected result."""
    return {
        name: ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": "internal"})
        if isinstance(result, ProbeError) and (result.kind == "internal" or str(result.key).startswith("internal."))
        else result
        for name, result in results.items()
    }


# -- 2. what to trace -----------------------------------------------------------------------------


def trace_plan(graded: Graded, diagnoser: Diagnoser, suites: HiddenSuites) -> TracePlan:
    """The failing probes worth a traced second run (`Diagnoser.trace_plan`); none when choosing
    fails (the diagnosis then has no trace)."""
    sources = graded.submission.sources
    if not sources:
        return TracePlan(shared={})
    try:
        probes, shared = diagnoser.trace_plan(list(graded.outcomes), graded.outputs, suites.uses, sources)
    except Exception:
        log.exception("choosing the probes to trace for %s failed", printable(graded.submission.name))
        return TracePlan(shared={})
    return TracePlan(tuple(probes), shared)


# -- 3. the diagnosis -----------------------------------------------------------------------------


def with_diagnoses(
    graded: Graded, diagnoser: Diagnoser, suites: HiddenSuites, traces: dict[str, dict], plan: TracePlan
) -> tuple[tuple[TestOutcome, ...], tuple[str, ...]]:
    """The outcomes with their causes and lines, and the stages that failed (left out of the report)."""
    submission = graded.submission
    outcomes = [_missing_module(o, submission) for o in graded.outcomes]
    partial: tuple[str, ...] = ()
    try:  # blame and diagnosis read the sandbox's own file names; the notebook's cells come after
        outcomes = diagnoser.diagnose_submission(
            outcomes, graded.outputs, suites.uses, submission.sources, traces, plan.shared
        )
    except Exception:
        log.exception("diagnosis of %s failed", printable(submission.name))
        outcomes = [replace(o, misconception=None, diagnosis=None) for o in outcomes]
        partial = ("diagnosis",)
    outcomes = attribute_to_earlier_sections(outcomes, suites.uses)  # on the modules' own file names
    outcomes = [_absent_not_broken(o, submission) for o in outcomes]
    outcomes = [_in_notebook_terms(_quoted(o, submission), submission) for o in outcomes]
    return tuple(_near_missed(_in_notebook_words(o, submission), submission) for o in outcomes), partial


def _missing_module(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    if outcome.status == "passed" or outcome.module in submission.sources or outcome.error is None:
        return outcome
    key = "import.missing-notebook" if submission.intake.notebooks else "import.missing"
    return replace(
        outcome,
        blocked_by=None,
        error=ProbeError(kind="import", key=key, module=outcome.module, params={"module": outcome.module}),
    )


_NOT_THERE = {"import.missing", "import.missing-notebook", "import.needs-absent", "import.needs-absent-notebook"}


def _absent_not_broken(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    """A module the submission does not have is missing, never broken: a check of such a module
    says its own module is missing; a check of a module that is there, which needs one that is
    not, says what it needs and that the submission does not have it."""
    if outcome.status == "passed":
        return outcome
    if outcome.module not in submission.sources:
        return replace(outcome, blocked_by=None) if outcome.blocked_by else outcome
    needed = outcome.blocked_by or _undefined_owner(outcome)
    if needed is None or needed in submission.sources:
        return outcome
    names = [n for n in REQUIRED.get(needed, ()) if n in CLASSES] or list(REQUIRED.get(needed, ()))
    params = {"module": needed, "names": ", ".join(names)}
    key = "import.needs-absent-notebook" if submission.intake.notebooks else "import.needs-absent"
    return replace(outcome, blocked_by=None, error=ProbeError(kind="import", key=key, module=needed, params=params))


_UNDEFINED = re.compile(r"name '(\w+)' is not defined")


def _undefined_owner(outcome: TestOutcome) -> str | None:
    """The module whose required name the test's NameError says is not defined."""
    error = outcome.error
    if error is None or error.kind != "exception" or error.exc_type != "NameError":
        return None
    match = _UNDEFINED.search(str(error.message or "")[:1000])
    return OWNER.get(match.group(1)) if match else None


def _in_notebook_words(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    """A function missing from a module made from a notebook: said of the notebook, not of a .py file."""
    error = outcome.error
    params = (error.params or {}) if error is not None else {}
    if error is None or error.key not in ("contract.missing-function", "contract.missing-module-attribute"):
        return outcome
    name = params.get("name") if error.key == "contract.missing-function" else params.get("path")
    if not isinstance(name, str) or "." in name:
        return outcome
    module = params.get("module")
    found = next((f for f in submission.intake.modules if f.module == module and f.how != "file"), None)
    if found is None:
        return outcome
    params = {**params, "name": name, "notebook": found.file}
    return replace(outcome, error=replace(error, key="contract.missing-function-notebook", params=params))


def _near_missed(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    """The misspelt name (`Intake.near_misses`) that explains a test's error, if there is one: a
    missing function of that name, or an error whose message names its class or the wanted name
    (`unexpected keyword argument 'qkv_bias'`, `missing the required "forward" function`)."""
    error = outcome.error
    if error is None or outcome.status == "passed" or outcome.blocked_by or not submission.intake.near_misses:
        return outcome
    params = error.params or {}
    text = str(error.message or "")[:10_000]
    misses = [
        m for m in submission.intake.near_misses if outcome.module == m.module or params.get("module") == m.module
    ]
    for miss in misses:  # the name the error names
        if miss.kind == "name" and str(error.key) in _NOT_THERE:
            hit = params.get("module") == miss.module  # the module is missing: a name of it is misspelt
        elif miss.kind == "name":
            hit = str(error.key).startswith("contract.missing-function") and params.get("name") == miss.wanted
        else:
            hit = error.kind in ("exception", "contract") and miss.wanted in text
        if hit:
            return replace(outcome, near_miss=miss)
    for miss in misses:  # else the class it names
        if miss.kind != "name" and error.kind in ("exception", "contract") and miss.owner and f"{miss.owner}." in text:
            return replace(outcome, near_miss=miss)
    for (
        miss
    ) in submission.intake.near_misses:  # a module that uses it: "name 'X' is not defined", "cannot import name 'X'"
        if miss.kind == "name" and error.kind in ("exception", "import") and f"'{miss.wanted}'" in text:
            return replace(outcome, near_miss=miss)
    return outcome


def _quoted(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    """Each error frame's code read from the submission's own sources (`grader.diagnosis.source.quotes`)."""
    error = quoted(outcome.error, submission.sources)
    return outcome if error is outcome.error else replace(outcome, error=error)


def _in_notebook_terms(outcome: TestOutcome, submission: Submission) -> TestOutcome:
    """Frames (and a syntax error's "file, line") and the diagnosis's line of modules made from
    notebooks, as cells."""
    if not submission.origins:
        return outcome
    error, diagnosis = outcome.error, outcome.diagnosis
    if error is not None:
        error = replace(
            error,
            frames=tuple(in_notebook_terms(frame, submission.origins) for frame in error.frames),
            message=message_in_notebook_terms(str(error.message), submission.origins),
        )
    if diagnosis is not None and diagnosis.location is not None:
        diagnosis = replace(diagnosis, location=in_notebook_terms(diagnosis.location, submission.origins))
    return replace(outcome, error=error, diagnosis=diagnosis)


# -- 4. the result --------------------------------------------------------------------------------


def grade_result(
    graded: Graded,
    outcomes: tuple[TestOutcome, ...],
    partial: tuple[str, ...],
    suites: HiddenSuites,
    reference: ProbeOutputs,
    catalog: Catalog,
    titles: dict[str, str],
    protections: list[IntegrityNote],
) -> GradeResult:
    submission = graded.submission
    integrity = list(protections) + list(submission.problems)
    integrity += [
        IntegrityNote("result.rejected", name)
        for name, result in graded.outputs.results.items()
        if isinstance(result, ProbeError) and result.kind == "integrity"
    ]
    with_messages = []
    for outcome in outcomes:
        try:
            with_messages.append(replace(outcome, message=outcome_message(outcome, catalog)))
        except Exception:
            log.exception("the message of %s for %s failed", outcome.id, printable(submission.name))
            with_messages.append(replace(outcome, message=words(catalog.t(f"status.{outcome.status}"))))
            partial += ("messages",)
    try:
        maps = heatmaps(suites.infos, reference, graded.outputs)
    except Exception:
        log.exception("the heatmaps of %s failed", printable(submission.name))
        maps, partial = [], partial + ("heatmaps",)
    integrity += [IntegrityNote("grader.partial", stage) for stage in dict.fromkeys(partial)]
    return _result(submission, with_messages, integrity, titles, graded.run.track, maps)


def failed_result(
    submission: Submission,
    suites: HiddenSuites,
    catalog: Catalog,
    titles: dict[str, str],
    protections: list[IntegrityNote],
    note: IntegrityNote,
    track: str,
    key: str = "internal.grading-failed",
) -> GradeResult:
    """A submission the grader could not grade: every test an error (0 points) saying `key`, and `note`."""
    outcomes = [
        TestOutcome(
            id=info.id,
            module=info.module,
            name=info.name,
            section=info.section,
            status="error",
            points=0.0,
            max_points=info.max_points,
            message=words(catalog.t(key)),
            error=ProbeError(kind="internal", key=key),
        )
        for info in suites.infos
    ]
    integrity = list(protections) + list(submission.problems) + [note]
    return _result(submission, outcomes, integrity, titles, track, [])


def with_note(result: GradeResult, note: IntegrityNote) -> GradeResult:
    return replace(result, integrity=[*result.integrity, note])


def _result(
    submission: Submission,
    outcomes: list[TestOutcome],
    integrity: list[IntegrityNote],
    titles: dict[str, str],
    track: str,
    maps: list[Heatmap],
) -> GradeResult:
    sections = [
        SectionScore(
            section,
            titles.get(section, section),
            sum(o.points for o in outcomes if o.section == section),
            sum(o.max_points for o in outcomes if o.section == section),
        )
        for section in titles
    ]
    return GradeResult(
        submission.name,
        submission.content_hash,
        sum(o.points for o in outcomes),
        sum(o.max_points for o in outcomes),
        sections,
        outcomes,
        integrity,
        heatmaps=maps,
        track=track,
        intake=submission.intake,
    )


def heatmaps(infos: list[SuiteItem], reference: ProbeOutputs, student: ProbeOutputs) -> list[Heatmap]:
    """The attention weights of the tests that draw them: the reference's and the student's."""
    maps = []
    for info in infos:
        if info.heatmap is None:
            continue
        probe, key = info.heatmap
        expected = (reference.outputs(probe) or {}).get(key)
        actual = (student.outputs(probe) or {}).get(key)
        expected2d = _first_matrix(expected)
        if expected2d is None:
            continue
        actual2d = _first_matrix(actual)
        if actual2d is not None and actual2d.shape != expected2d.shape:
            actual2d = None
        maps.append(
            Heatmap(
                info.id,
                f"tests.{info.id}.title",
                BOOK_TOKENS[: expected2d.shape[-1]],
                _rounded(expected2d),
                _rounded(actual2d) if actual2d is not None else None,
            )
        )
    return maps


def _first_matrix(t: object) -> torch.Tensor | None:
    """The first (T, T) matrix of a tensor of attention weights; None for anything else (not a
    tensor, fewer than two dimensions, no elements: a student's output may be any of these)."""
    if type(t) is not torch.Tensor or t.dim() < 2 or t.numel() == 0:
        return None
    while t.dim() > 2:
        t = t[0]
    return t


def _rounded(t: torch.Tensor) -> list[list[float]]:
    return [[round(v, 4) for v in row] for row in t.double().tolist()]
