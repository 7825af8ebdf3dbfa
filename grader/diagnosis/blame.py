"""Which module a failure is blamed on: where its cause is, not where the exception surfaced.

An exception raised inside another module's code (a MultiHeadAttention refusing d_out=64, a
CausalAttention whose projection gets the wrong input size) blocks the test only when that module is
itself broken. When the module passes its own tests, it was given something wrong: the cause is in
the calling module, and the failure is that module's. For the exercises that do nothing but
configure a module of 3.6 (BUILDERS), that is a wrong configuration. When the exception passed
through the code of a third module that is broken itself (an exercise's wrapper creating its heads
with d_in and d_out swapped), which of the two handed over the wrong thing is unknown: the test is
blocked by that module, and no cause is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from grader.records import ProbeError, TestOutcome
from grader.sections import SECTIONS

# exercises whose whole task is to configure a module of section 3.6
BUILDERS = frozenset(s.module for s in SECTIONS if s.configures)


def relied_on(
    outcome: TestOutcome, module: str, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]
) -> list[TestOutcome]:
    """The tests of `module` whose code `outcome`'s test also runs: those its `uses` marker names,
    else every test of that module."""
    named = set(uses.get(outcome.id, ()))
    tests = [o for o in outcomes if o.module == module]
    chosen = [o for o in tests if o.id in named]
    return chosen or tests


def caller_is_blamed(outcome: TestOutcome, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]) -> bool:
    """The exception surfaced in another module that passes the tests this one relies on, and passed
    through no third module that fails them."""
    return _handed_over(outcome, outcomes, uses) and _through_failing(outcome, outcomes, uses) is None


def _handed_over(outcome: TestOutcome, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]) -> bool:
    """The exception surfaced in another module that passes the tests this one relies on."""
    error = outcome.error
    if outcome.status == "passed" or error is None or not error.module or error.module == outcome.module:
        return False
    tests = relied_on(outcome, error.module, outcomes, uses)
    return bool(tests) and all(o.status == "passed" for o in tests)


def _through_failing(
    outcome: TestOutcome, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]
) -> str | None:
    """The third module, nearest to where the exception surfaced, whose code it passed through and
    which fails tests this one relies on (a wrapper that creates its heads with d_in and d_out
    swapped): what it handed over may be its own mistake, and the evidence cannot tell."""
    error = outcome.error
    if error is None:
        return None
    for module in dict.fromkeys(f.file.removesuffix(".py") for f in reversed(error.frames)):
        tests = relied_on(outcome, module, outcomes, uses) if module not in (outcome.module, error.module) else []
        if any(o.status != "passed" for o in tests):
            return module
    return None


def failing_modules_relied_on(
    outcome: TestOutcome, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]
) -> list[str]:
    """The modules of the tests that `outcome`'s test is marked as using (its `uses`: tests of earlier
    sections whose code it also runs) that do not pass, in the marker's order: its failure may be theirs."""
    status = {o.id: o.status for o in outcomes}
    return list(
        dict.fromkeys(
            test.split("::")[0] for test in uses.get(outcome.id, ()) if status.get(test, "passed") != "passed"
        )
    )


def in_caller(error: ProbeError, module: str) -> ProbeError:
    """The error as seen from `module`: its traceback cut after the last frame in that module (where
    the caller handed over what went wrong), and the module blamed."""
    frames = error.frames
    last = max((i for i, f in enumerate(frames) if f.file.removesuffix(".py") == module), default=None)
    if last is not None:
        frames = frames[: last + 1]
    return replace(error, frames=frames, module=module)


def decide_blame(
    outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]
) -> tuple[list[TestOutcome], set[str]]:
    """The outcomes with the failures whose cause is in their own module unblocked (those tests' ids
    returned too), and those handed over through a broken module blocked by it."""
    moved = {outcome.id for outcome in outcomes if caller_is_blamed(outcome, outcomes, uses)}
    through = {  # handed over by a broken module in between: blocked by it, no cause named
        o.id: module
        for o in outcomes
        if _handed_over(o, outcomes, uses) and (module := _through_failing(o, outcomes, uses)) is not None
    }
    return [
        replace(o, error=in_caller(o.error, o.module), blocked_by=None)
        if o.id in moved and o.error is not None
        else replace(o, blocked_by=through[o.id])
        if o.id in through
        else o
        for o in outcomes
    ], moved


def attribute_to_earlier_sections(
    outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]
) -> list[TestOutcome]:
    """A failure in a test that also runs code of an earlier section that fails its own tests is
    blamed on that section ("blocked by") when it has no diagnosis of its own, or when its
    diagnosis locates the cause in that section's file (the cause is there, not here); so is a
    failure whose diagnosis locates the cause in another module that fails its own tests. Then
    every test is blocked only by a module that fails tests of its own (`charged_once`)."""
    failing = own_failures(outcomes)
    return charged_once([_attributed(outcome, outcomes, uses, failing) for outcome in outcomes])


def own_failures(outcomes: list[TestOutcome]) -> set[str]:
    """The modules that fail tests of their own: a test that does not pass and is not blocked by another."""
    return {o.module for o in outcomes if o.status != "passed" and not o.blocked_by}


def _attributed(
    outcome: TestOutcome, outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]], failing: set[str]
) -> TestOutcome:
    if outcome.status == "passed" or outcome.blocked_by:
        return outcome
    broken = failing_modules_relied_on(outcome, outcomes, uses)
    location = outcome.diagnosis.location if outcome.diagnosis is not None else None
    elsewhere = location.file.removesuffix(".py") if location is not None else ""
    if elsewhere != outcome.module and elsewhere in failing and elsewhere not in broken:
        return replace(outcome, blocked_by=elsewhere, misconception=None)  # the cause is in that module's code
    charged = next((m for m in broken if outcome.misconception in _named(m, outcomes)), None)
    if charged is not None:  # the cause its module's own tests name: charged there, once
        return replace(outcome, blocked_by=charged, misconception=None)
    if not broken or outcome.misconception and not (elsewhere != outcome.module and elsewhere in broken):
        return outcome
    # that section's own tests name it; the diagnosis shows its line
    return replace(outcome, blocked_by=elsewhere if elsewhere in broken else broken[0], misconception=None)


def _named(module: str, outcomes: list[TestOutcome]) -> set[str]:
    """The causes the failing tests of `module` (not blocked by another) name."""
    return {
        m
        for o in outcomes
        if o.module == module and o.status != "passed" and not o.blocked_by and o.diagnosis is not None
        for m in o.diagnosis.misconceptions
    }


def charged_once(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """Each test blocked only by a module that fails tests of its own: a test blocked by a module
    whose failures are all inherited is blocked by the module they come from; by a module whose
    tests all pass, by none (its failure is its own)."""
    failing = own_failures(outcomes)
    upstream: dict[str, str] = {}
    for o in outcomes:
        if o.status != "passed" and o.blocked_by:
            upstream.setdefault(o.module, o.blocked_by)

    def root(module: str) -> str | None:
        seen: set[str] = set()
        while module not in failing and module in upstream and module not in seen:
            seen.add(module)
            module = upstream[module]
        return module if module in failing else None

    return [
        replace(o, blocked_by=root(o.blocked_by)) if o.blocked_by and o.blocked_by not in failing else o
        for o in outcomes
    ]


def located_in_own_module(tests: tuple[str, ...], outcomes: list[TestOutcome]) -> TestOutcome | None:
    """The first of `tests` that fails with a diagnosis located in its own module's file."""
    return next(
        (
            o
            for o in outcomes
            if o.id in tests
            and o.status != "passed"
            and o.diagnosis is not None
            and o.diagnosis.location is not None
            and o.diagnosis.location.file.removesuffix(".py") == o.module
        ),
        None,
    )


def dependencies_pass(outcomes: list[TestOutcome], uses: Mapping[str, tuple[str, ...]]):
    """A test's modules of earlier sections work: the tests it (or its module's tests) `uses` pass."""
    status = {o.id: o.status for o in outcomes}
    by_module: dict[str, set[str]] = {}
    for test, used in uses.items():
        by_module.setdefault(test.split("::")[0], set()).update(used)

    def healthy(outcome: TestOutcome) -> bool:
        used = set(uses.get(outcome.id, ())) or by_module.get(outcome.module, set())
        return all(status.get(test, "passed") == "passed" for test in used)

    return healthy
