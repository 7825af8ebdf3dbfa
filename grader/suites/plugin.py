"""The pytest plugin that runs the hidden suites once per submission inside one pytest session.

Collection happens once; then `pytest_runtestloop` takes submissions one by one from `source`,
binds the `student` fixture to that submission's seam and runs every collected item with
pytest's own `runtestprotocol`. Each item becomes a `TestOutcome` with points from its
`@pytest.mark.points(n)` marker; `sink` receives one submission's outcomes at a time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import pytest
from _pytest.runner import runtestprotocol

from grader.suites.compare import Mismatch
from grader.records import MODULE_SECTIONS, Detail, ProbeError, TestOutcome
from grader.suites.seam import Seam, StudentError

SUITES_DIR = Path(__file__).resolve().parent / "hidden"
ERROR_STATUS = {"timeout": "timeout", "resource": "resource"}


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


def item_info(item: pytest.Item) -> SuiteItem:
    module = Path(str(item.fspath)).stem.removeprefix("test_")
    if module not in MODULE_SECTIONS:
        raise pytest.UsageError(f"hidden suite file {item.fspath} is not named after a student module")
    marker = item.get_closest_marker("points")
    if marker is None or not marker.args:
        raise pytest.UsageError(f"hidden test {item.nodeid} declares no points")
    heatmap = item.get_closest_marker("heatmap")
    uses = item.get_closest_marker("uses")
    return SuiteItem(f"{module}::{item.name}", module, item.name, MODULE_SECTIONS[module],
                     float(marker.args[0]), tuple(heatmap.args) if heatmap else None,
                     tuple(uses.args) if uses else ())


class GradingPlugin:
    def __init__(self, reference: Seam, source: Iterable[tuple[object, Seam]],
                 sink: Callable[[object, Seam, list[TestOutcome]], None],
                 reference_of: Callable[[object], Seam] | None = None):
        self._reference = reference
        self.current_reference = reference
        self.reference_of = reference_of or (lambda submission: reference)  # per track (grader.suites.tracks)
        self.source = source
        self.sink = sink
        self.current: Seam | None = None
        self.items: list[pytest.Item] = []
        self.infos: list[SuiteItem] = []

    # -- configuration ----------------------------------------------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        register_markers(config)

    @pytest.fixture
    def student(self) -> Seam:
        return self.current

    @pytest.fixture
    def reference(self) -> Seam:
        return self.current_reference

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        order = list(MODULE_SECTIONS)
        items.sort(key=lambda item: order.index(Path(str(item.fspath)).stem.removeprefix("test_"))
                   if Path(str(item.fspath)).stem.removeprefix("test_") in order else len(order))
        self.items = list(items)
        self.infos = [item_info(item) for item in items]
        self.direct = [_direct_call(item) for item in items]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        yield
        if call.excinfo is not None and call.when in ("setup", "call"):
            item.stash[_EXCINFO] = call.excinfo

    # -- the loop ---------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed or session.config.option.collectonly:
            return True
        for submission, seam in self.source:
            self.grade(submission, seam)
        return True

    def grade(self, submission: object, seam: Seam) -> None:
        """Every collected test on one submission's seam; its outcomes go to `sink`."""
        self.current = seam
        self.current_reference = self.reference_of(submission)
        outcomes = [self._run(item, info, seam, direct)
                    for item, info, direct in zip(self.items, self.infos, self.direct)]
        self.current = None
        self.sink(submission, seam, outcomes)

    def _run(self, item: pytest.Item, info: SuiteItem, seam: Seam, direct: dict | None = None) -> TestOutcome:
        seam.accessed = []
        if direct is not None:
            # The fast path (see `_direct_call`): the test function itself, with its two fixtures.
            passed, skipped, error = True, False, None
            try:
                item.obj(**{name: (seam if name == "student" else self.current_reference if name == "reference" else value)
                            for name, value in direct.items()})
            except pytest.skip.Exception:
                passed, skipped = False, True
            except Exception as exc:  # noqa: BLE001 - classified below, exactly as pytest's report would be
                passed, error = False, exc
        else:
            item.stash[_EXCINFO] = None
            reports = runtestprotocol(item, log=False, nextitem=None)
            passed = all(report.passed for report in reports)
            skipped = any(report.skipped for report in reports)
            excinfo = item.stash.get(_EXCINFO, None)
            error = excinfo.value if excinfo is not None else None
        outcome = TestOutcome(id=info.id, module=info.module, name=info.name, section=info.section,
                              status="passed", points=info.max_points, max_points=info.max_points,
                              probes=tuple(seam.accessed))
        if passed:
            return outcome
        outcome.points = 0.0
        if skipped:
            outcome.status = "skipped"
            return outcome
        if isinstance(error, StudentError):
            outcome.error = error.error
            outcome.status = ERROR_STATUS.get(error.error.kind, "error")
            if error.error.module and error.error.module != info.module:
                outcome.blocked_by = error.error.module
        elif isinstance(error, Mismatch):
            outcome.status = "failed"
            outcome.detail = error.detail
        elif isinstance(error, AssertionError):
            outcome.status = "failed"
            outcome.detail = Detail("mismatch.assertion", {"text": str(error)[:500]})
        elif difference := seam.form_difference(self._reference):
            # The suite could not handle the student's outputs: they are not in the reference's form.
            if difference[0] == "form":  # not what the probe's own code builds: forged in the child
                outcome.status = "error"
                outcome.error = ProbeError(kind="integrity", key="integrity.forged-result")
            else:
                outcome.status = "failed"
                outcome.detail = Detail("mismatch.unexpected-shape", {"got": difference[1], "expected": difference[2]})
        else:
            # A defect of the hidden suite itself: never blame the student, never show its source.
            outcome.status = "error"
            outcome.error = ProbeError(kind="internal", key="internal.suite-error",
                                       params={"type": type(error).__name__, "text": str(error)[:300]})
        return outcome


_EXCINFO = pytest.StashKey()
_DIRECT_MARKERS = {"points", "heatmap", "uses", "parametrize"}


def _direct_call(item: pytest.Item) -> dict | None:
    """Arguments for calling a hidden test's function directly, or None to use `runtestprotocol`.

    pytest's per-item protocol (three phases, each with its hooks and report objects, and a
    formatted traceback for every failure) costs far more than the comparisons a hidden test makes,
    once per test and submission. A test that only asks for the `student` and `reference` fixtures
    (and parametrize values), with no marker but points/heatmap/parametrize, has no setup or
    teardown for pytest to run: calling its function is the whole test. Anything else (other
    fixtures, skip/xfail/usefixtures markers, non-function items) goes through pytest's protocol.
    """
    if not isinstance(item, pytest.Function) or getattr(item, "_obj", None) is None and not hasattr(item, "obj"):
        return None
    if {marker.name for marker in item.iter_markers()} - _DIRECT_MARKERS:
        return None
    callspec = getattr(item, "callspec", None)
    params = dict(callspec.params) if callspec is not None else {}
    names = set(item.fixturenames)
    if not names <= {"student", "reference"} | set(params):
        return None
    arguments = {name: None for name in ("student", "reference") if name in names}
    arguments.update({name: value for name, value in params.items() if name in names})
    return arguments


def register_markers(config: pytest.Config) -> None:
    """The suites' own markers (the grader's plugin and the baseline's both register them)."""
    config.addinivalue_line("markers", "points(n): points the test is worth")
    config.addinivalue_line("markers", "heatmap(probe, key): attention weights to draw for this test")
    config.addinivalue_line("markers", "uses(*test_ids): tests of earlier sections whose code this test also runs")


def run_suites(plugin: object, *extra: str) -> pytest.ExitCode | int:
    """pytest.main on the hidden suites with `plugin`, with no third-party plugin autoloaded."""
    previous = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        return pytest.main(pytest_args() + list(extra), plugins=[plugin])
    finally:
        if previous is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)


def pytest_args() -> list[str]:
    """Arguments for a pytest session that reads no configuration or plugins from the outside."""
    return [str(SUITES_DIR), "-c", str(SUITES_DIR / "pytest.ini"), "--rootdir", str(SUITES_DIR),
            "--noconftest", "--import-mode=importlib", "-s",
            "-p", "no:cacheprovider", "-p", "no:warnings", "-p", "no:logging", "-p", "no:faulthandler",
            "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:stepwise",
            "-p", "no:doctest", "-p", "no:junitxml", "-p", "no:pastebin", "-p", "no:nose",
            "-p", "no:terminal"]
