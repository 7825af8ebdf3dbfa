"""The second pass runs in the sandbox: the probes that failed are traced there (mode "trace"),
size-capped, and the traces only shape the student's feedback text. Also two feedback defects:
messages never show the sandbox's scratch folder, and a notebook submission's diagnosis names the
notebook's cell and the line in it, not the converted .py file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from in_process import student_modules

from grader.diagnosis.trace.documents import parse_trace
from grader.probes import PROBES, load_all
from grader.probes.tracer import traced
from grader.run import grade
from grader.sandbox import codec, driver
from tests.conftest import MODULES, ROOT, solutions_as_submission
from tests.test_notebooks import code_cell, notebook, split_cells, write

SHAPE = ROOT / "tests" / "submissions" / "shapes" / "wrong-scaling" / "sqrt-tokens-causal"
MODULE = "sec3_5_causal_attention"
CHECK = f"{MODULE}::test_causal_attention_matches_reference"


def _mistake() -> tuple[int, str]:
    lines = (SHAPE / f"{MODULE}.py").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "<- the mistake" in text)
    return line, lines[line - 1].split("#")[0].strip()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class of two with the same mistake: one hands in .py files, one notebooks."""
    base = tmp_path_factory.mktemp("traced")
    klass = base / "class"
    py = solutions_as_submission(klass / "py")
    shutil.copy(SHAPE / f"{MODULE}.py", py / f"{MODULE}.py")
    nb = klass / "nb"
    nb.mkdir()
    for module in MODULES:
        cells = [code_cell(text) for text in split_cells((py / f"{module}.py").read_text())]
        write(nb / f"{module}.ipynb", notebook(cells))
    grade(klass, base / "out", jobs=2)
    results = {name: json.loads((base / "out" / name / "results.json").read_text()) for name in ("py", "nb")}
    reports = {name: "".join(p.read_text() for p in (base / "out" / name).glob("feedback*")) for name in ("py", "nb")}
    return results, reports, nb


def _test(results: dict, test_id: str) -> dict:
    return next(t for t in results["tests"] if t["id"] == test_id)


def test_the_failed_probes_are_traced_in_the_sandbox_and_located(graded):
    results, reports, _ = graded
    line, _code = _mistake()
    diagnosis = _test(results["py"], CHECK)["diagnosis"]
    assert diagnosis["evidence"] == "trace" and diagnosis["misconceptions"] == ["wrong-scaling"]
    assert (diagnosis["file"], diagnosis["line"]) == (f"{MODULE}.py", line)
    passed = [t for t in results["py"]["tests"] if t["status"] == "passed"]
    assert passed and all(t["diagnosis"] is None for t in passed)  # only what failed is diagnosed


def test_no_report_shows_the_sandbox_scratch_folder(graded):
    results, reports, _ = graded
    for name in ("py", "nb"):
        assert "/tmp/submission-" not in json.dumps(results[name]) and "/tmp/submission-" not in reports[name]
        assert "submission-" not in reports[name]


def test_a_notebook_diagnosis_names_the_cell_and_its_line(graded):
    results, reports, folder = graded
    _line, code = _mistake()
    diagnosis = _test(results["nb"], CHECK)["diagnosis"]
    assert diagnosis["misconceptions"] == ["wrong-scaling"]
    assert diagnosis["file"] == f"{MODULE}.ipynb"
    cells = json.loads((folder / f"{MODULE}.ipynb").read_text())["cells"]
    cell = next(c for c in cells if code in "".join(c["source"]))
    number = cells.index(cell) + 1
    assert diagnosis["cell"] == number
    assert "".join(cell["source"]).splitlines()[diagnosis["line"] - 1].strip().startswith(code)
    assert f"{MODULE}.ipynb" in reports["nb"] and f"{MODULE}.py, line" not in reports["nb"]


def test_the_notebook_earns_what_its_py_files_earn(graded):
    """Naming cells instead of lines changes the text only: the same points, test by test."""
    results, _, _ = graded
    points = lambda name: {t["id"]: t["points"] for t in results[name]["tests"]}  # noqa: E731
    assert points("py") == points("nb")


# -- the size cap of what the sandbox sends back ------------------------------------------------------


@pytest.fixture(scope="module")
def reference_trace() -> dict:
    load_all()
    import solutions

    with student_modules(Path(solutions.__file__).parent) as ns:
        return traced(driver.run_probe, PROBES[f"{MODULE}:matches_reference"], ns, ns.directory)["trace"]


@settings(max_examples=40, deadline=None)
@given(cap=st.integers(min_value=0, max_value=40_000))
def test_a_trace_is_cut_to_fit_and_still_parses(reference_trace, cap):
    fitted = driver.fitted(reference_trace, cap)
    payload = codec.encode_plain({"ok": {"trace": driver.packed(fitted)}})  # as the sandbox sends it
    document = codec.decode(payload)["ok"]["trace"]
    assert int.from_bytes(payload[:4], "big") <= max(cap, 80)
    parse_trace(document)  # every reference left in range
    if fitted is not reference_trace:
        assert document["truncated"] is True
        assert document["ops"] == reference_trace["ops"][: len(document["ops"])]


# -- a trace is data that shapes text, never a score ---------------------------------------------------

JUNK = [
    None,
    [],
    "x" * 100,
    {"ops": [], "nodes": [], "calls": [], "truncated": False},
    {
        "ops": [
            {
                "name": "softmax",
                "call": 0,
                "stack": [["../../etc/passwd", 1, "f"]],
                "args": [],
                "kwargs": {},
                "in": [7],
                "out": [99],
            }
        ],
        "nodes": [],
        "calls": [],
        "truncated": False,
    },
]


@pytest.mark.parametrize("junk", JUNK, ids=["none", "list", "text", "empty", "dangling"])
def test_a_hostile_trace_changes_no_score_and_no_status(tmp_path, monkeypatch, junk):
    import in_process

    student = solutions_as_submission(tmp_path / "student")
    shutil.copy(SHAPE / f"{MODULE}.py", student / f"{MODULE}.py")
    seen: dict[str, list] = {}

    def keep(name):
        return lambda directory, seam, outcomes: seen.__setitem__(name, outcomes)

    in_process.grade_in_process([student], keep("plain"), trace=False)
    monkeypatch.setattr(in_process, "trace_probes", lambda directory, probes: {p: junk for p in probes})
    in_process.grade_in_process([student], keep("junk"))
    plain = {o.id: (o.status, o.points) for o in seen["plain"]}
    assert plain == {o.id: (o.status, o.points) for o in seen["junk"]}
    assert any(status == "failed" for status, _ in plain.values())
    for outcome in seen["junk"]:
        location = outcome.diagnosis.location if outcome.diagnosis else None
        assert location is None or "passwd" not in location.file


def test_only_trace_records_are_read_from_a_trace_job():
    from grader.diagnosis.trace.documents import documents_of
    from grader.records import ProbeError

    good = {"ops": [], "nodes": [], "calls": [], "truncated": False}
    results = {
        "a": {"trace": good},
        "b": ProbeError(kind="resource", key="sandbox.over-budget"),
        "c": {"trace": good, "extra": 1},
        "d": {"trace": [good]},
        "e": {"out": good},
    }
    assert documents_of(results) == {"a": good}


def test_the_same_trace_payload_has_the_same_digest(tmp_path):
    """Two copies of one wrong code (a comment apart) send the same trace payloads: their digests
    match, so the trusted side reads each trace once (evidence.Findings); other code, other digests."""
    from grader.intake.discovery import read_submission
    from grader.sandbox.pool import SandboxPool

    probe = f"{MODULE}:matches_reference"
    copies = []
    for name in ("one", "two"):
        folder = solutions_as_submission(tmp_path / name)
        (folder / f"{MODULE}.py").write_text((SHAPE / f"{MODULE}.py").read_text() + f"\n# {name}\n")
        copies.append(read_submission(folder))
    copies.append(read_submission(solutions_as_submission(tmp_path / "correct")))
    with SandboxPool(1, probes=[probe]) as pool:
        for submission in copies:
            pool.submit(submission, mode="trace")
        runs = {run.submission.name: run for run in pool.results()}
    assert all("trace" in runs[name].results[probe] for name in runs)
    one, two, correct = (runs[name].digests[probe] for name in ("one", "two", "correct"))
    assert one == two != correct and len(one) == 32
