"""The hidden suites, collected once by pytest and run on each submission's probe outputs.

pytest reads the suites (`hidden/test_*.py`): their functions, `@pytest.mark.points(n)`,
`heatmap` and `uses` markers and parametrisations. Running a test is then a plain call of its
function with the `student` and `reference` probe outputs: a hidden test asks for nothing else
(collection refuses one that does), so it has no setup or teardown for pytest to run, and one
submission's outcomes are `HiddenSuites.run(student, reference)`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grader.probe_outputs import ProbeOutputs, StudentError
from grader.records import MODULE_SECTIONS, Detail, ProbeError, TestOutcome
from grader.suites.compare import Mismatch

SUITES_DIR = Path(__file__).resolve().parent / "hidden"
ERROR_STATUS = {"timeout": "timeout", "resource": "resource"}
FIXTURES = ("student", "reference")
MARKERS = {"points", "heatmap", "uses", "parametrize"}


class SuitesCannotRun(Exception):
    """pytest could not collect the hidden suites (a defect of the kit, not of any submission)."""


@dataclass(frozen=True)
class SuiteItem:
    """What the grader knows about one hidden test, independent of any submission."""

    id: str
    module: str
    name: str
    section: str
    max_points: float
    heatmap: tuple[str, str] | None  # (probe, output key) of attention weights on the book sentence
    uses: tuple[str, ...] = ()  # ids of tests of earlier sections whose code this test runs too
    # judged against what that earlier code gives (`uses(..., own=True)`): its failures are its own
    judged_on_own: bool = False


@dataclass(frozen=True)
class _Test:
    info: SuiteItem
    function: Callable[..., Any]
    fixtures: tuple[str, ...]  # which of FIXTURES it asks for
    params: tuple[tuple[str, Any], ...]  # its parametrisation's values


class HiddenSuites:
    """The collected hidden tests, in book order."""

    def __init__(self, tests: list[_Test]):
        self._tests = tests
        self.infos = [test.info for test in tests]
        # the earlier tests a failure may be blamed on: none for a test judged against the student's
        # own earlier code (docs/grading-policy.md)
        self.uses = {info.id: () if info.judged_on_own else info.uses for info in self.infos}

    def run(self, student: ProbeOutputs, reference: ProbeOutputs) -> tuple[TestOutcome, ...]:
        """Every hidden test's outcome on `student`'s outputs, compared with `reference`'s. Whatever
        the student's outputs provoke in a test, or in the grader's handling of it, is that test's
        outcome, never the run's end."""
        with warnings.catch_warnings():  # what the student's outputs provoke is said in the outcome, not the console
            warnings.simplefilter("ignore")
            return tuple(_guarded(test, student, reference) for test in self._tests)


def collect() -> HiddenSuites:
    """The hidden suites as pytest collects them, with no configuration or plugin from outside."""
    collector = _Collector()
    previous = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        code = pytest.main([*pytest_args(), "--collect-only"], plugins=[collector])
    finally:
        if previous is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if code != pytest.ExitCode.OK or collector.error or not collector.tests:
        raise SuitesCannotRun(collector.error or f"pytest exit code {int(code)}")
    return HiddenSuites(collector.tests)


class _Collector:
    def __init__(self) -> None:
        self.tests: list[_Test] = []
        self.error = ""

    def pytest_configure(self, config: pytest.Config) -> None:
        register_markers(config)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        order = list(MODULE_SECTIONS)
        try:
            tests = [_test(item) for item in items]
        except ValueError as exc:
            self.error = str(exc)
            return
        self.tests = sorted(tests, key=lambda test: order.index(test.info.module))


def _test(item: pytest.Item) -> _Test:
    """One collected item as a `_Test`; a ValueError for an item the grader cannot run as a call."""
    module = Path(str(item.path)).stem.removeprefix("test_")
    if module not in MODULE_SECTIONS:
        raise ValueError(f"hidden suite file {item.path.name} is not named after a student module")
    if not isinstance(item, pytest.Function):
        raise ValueError(f"hidden test {item.nodeid} is not a function")
    points = item.get_closest_marker("points")
    if points is None or not points.args:
        raise ValueError(f"hidden test {item.nodeid} declares no points")
    extra = {marker.name for marker in item.iter_markers()} - MARKERS
    callspec = getattr(item, "callspec", None)
    params = dict(callspec.params) if callspec is not None else {}
    unknown = set(item.fixturenames) - set(FIXTURES) - set(params)
    if extra or unknown:
        raise ValueError(
            f"hidden test {item.nodeid} asks for {sorted(extra | unknown)}: "
            f"only the fixtures {FIXTURES} and the markers {sorted(MARKERS)} are allowed"
        )
    heatmap, uses = item.get_closest_marker("heatmap"), item.get_closest_marker("uses")
    info = SuiteItem(
        f"{module}::{item.name}",
        module,
        item.name,
        MODULE_SECTIONS[module],
        float(points.args[0]),
        tuple(heatmap.args) if heatmap else None,
        tuple(uses.args) if uses else (),
        bool(uses.kwargs.get("own")) if uses else False,
    )
    return _Test(
        info,
        item.obj,
        tuple(name for name in FIXTURES if name in item.fixturenames),
        tuple((name, value) for name, value in params.items() if name in item.fixturenames),
    )


def _guarded(test: _Test, student: ProbeOutputs, reference: ProbeOutputs) -> TestOutcome:
    try:
        return _outcome(test, student, reference)
    except Exception as exc:  # noqa: BLE001 - a defect of the suite or the grader: never the student's
        return _failed(test.info, student, "error", error=_internal(exc))


def _outcome(test: _Test, student: ProbeOutputs, reference: ProbeOutputs) -> TestOutcome:
    """The test's outcome: passed, skipped, or what its exception says went wrong."""
    info = test.info
    student.accessed = []
    arguments = {"student": student, "reference": reference}
    try:
        test.function(**{name: arguments[name] for name in test.fixtures}, **dict(test.params))
    except pytest.skip.Exception:
        return _failed(info, student, "skipped")
    except Exception as exc:  # noqa: BLE001 - classified by `_failure`
        return _failure(info, student, reference, exc)
    return TestOutcome(
        id=info.id,
        module=info.module,
        name=info.name,
        section=info.section,
        status="passed",
        points=info.max_points,
        max_points=info.max_points,
        probes=tuple(student.accessed),
    )


def _failure(info: SuiteItem, student: ProbeOutputs, reference: ProbeOutputs, error: Exception) -> TestOutcome:
    if isinstance(error, StudentError):
        blocked = error.error.module if error.error.module and error.error.module != info.module else None
        return _failed(
            info, student, ERROR_STATUS.get(error.error.kind, "error"), error=error.error, blocked_by=blocked
        )
    if isinstance(error, Mismatch):
        return _failed(info, student, "failed", detail=error.detail)
    if isinstance(error, AssertionError):
        return _failed(info, student, "failed", detail=Detail("mismatch.assertion", {"text": str(error)[:500]}))
    difference = student.form_difference(reference)
    if difference and difference[0] == "form":  # not what the probe's own code builds: forged in the child
        return _failed(info, student, "error", error=ProbeError(kind="integrity", key="integrity.forged-result"))
    if difference:  # the suite could not handle outputs of another shape than the reference's
        return _failed(
            info,
            student,
            "failed",
            detail=Detail("mismatch.unexpected-shape", {"got": difference[1], "expected": difference[2]}),
        )
    return _failed(info, student, "error", error=_internal(error))  # a defect of the suite: never shown as code


def _internal(error: BaseException) -> ProbeError:
    try:
        text = str(error)[:300]
    except Exception:  # noqa: BLE001
        text = type(error).__name__
    return ProbeError(kind="internal", key="internal.suite-error", params={"type": type(error).__name__, "text": text})


def _failed(info: SuiteItem, student: ProbeOutputs, status: str, **fields: Any) -> TestOutcome:
    return TestOutcome(
        id=info.id,
        module=info.module,
        name=info.name,
        section=info.section,
        status=status,
        points=0.0,
        max_points=info.max_points,
        probes=tuple(student.accessed),
        **fields,
    )


def register_markers(config: pytest.Config) -> None:
    """The suites' own markers."""
    config.addinivalue_line("markers", "points(n): points the test is worth")
    config.addinivalue_line("markers", "heatmap(probe, key): attention weights to draw for this test")
    config.addinivalue_line(
        "markers",
        "uses(*test_ids, own=False): tests of earlier sections whose code this test also runs "
        "(own=True: the test judges against what that code gives, so none of its failures is theirs)",
    )


def pytest_args() -> list[str]:
    """Arguments for a pytest session that reads no configuration or plugins from the outside."""
    return [
        str(SUITES_DIR),
        "-c",
        str(SUITES_DIR / "pytest.ini"),
        "--rootdir",
        str(SUITES_DIR),
        "--noconftest",
        "--import-mode=importlib",
        "-s",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:warnings",
        "-p",
        "no:logging",
        "-p",
        "no:faulthandler",
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        "-p",
        "no:stepwise",
        "-p",
        "no:doctest",
        "-p",
        "no:junitxml",
        "-p",
        "no:pastebin",
        "-p",
        "no:nose",
        "-p",
        "no:terminal",
    ]
