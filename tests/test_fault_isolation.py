"""One student's crash never stops the class: every stage that handles one student's data (reading,
each hidden test, diagnosis, messages, heatmaps, rendering, writing, the whole grading of a
result) is made to fail for one student; that student gets a note (and an error result where the
points depend on the failed stage), everyone else is graded as usual, the class reports are
written, and a rerun reuses the results instead of repeating the crash."""

from __future__ import annotations

import pytest

import grader.intake.discovery as discovery
import grader.report.writers as writers
import grader.run.grading as grading
import grader.run.stages as stages
import grader.suites.hidden_suites as hidden_suites
from grader.diagnosis import Diagnoser
from grader.run import grade
from grader.sandbox.tracks import TrackPools
from tests.conftest import solutions_as_submission

VICTIMS = {  # student -> the stage that fails for them, and what they must end with
    "read_fails": "submission.unreadable",
    "test_fails": None,
    "diagnosis_fails": "grader.partial",
    "heatmaps_fail": "grader.partial",
    "render_fails": "report.failed",
    "grading_fails": "grader.failed",
    "write_fails": "report.failed",
}


class Boom(Exception):
    pass


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("isolation")
    klass = base / "class"
    for name in ["honest", *VICTIMS]:
        solutions_as_submission(klass / name)
    monkeypatch = pytest.MonkeyPatch()

    def failing(stage: str, real, name_of):
        def wrapper(*args, **kwargs):
            if name_of(*args, **kwargs) == stage:
                raise Boom(stage)
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        discovery,
        "read_level",
        failing("read_fails", discovery.read_level, lambda folder, assembly, *more: assembly.name),
    )
    monkeypatch.setattr(
        stages,
        "heatmaps",
        failing("heatmaps_fail", stages.heatmaps, lambda infos, reference, seam: _seam_owner.get(id(seam))),
    )
    monkeypatch.setattr(
        stages, "grade_result", failing("grading_fails", stages.grade_result, lambda graded, *a: graded.submission.name)
    )
    monkeypatch.setattr(
        writers,
        "render_feedback",
        failing("render_fails", writers.render_feedback, lambda result, catalog: result.submission),
    )
    monkeypatch.setattr(
        grading,
        "write_submission_reports",
        failing("write_fails", grading.write_submission_reports, lambda result, out_dir, catalog: result.submission),
    )
    real_diagnose = Diagnoser.diagnose_submission

    def diagnose(self, outcomes, seam, *args, **kwargs):
        if _seam_owner.get(id(seam)) == "diagnosis_fails":
            raise Boom("diagnosis")
        return real_diagnose(self, outcomes, seam, *args, **kwargs)

    monkeypatch.setattr(Diagnoser, "diagnose_submission", diagnose)
    real_run = hidden_suites._outcome

    def run_test(test, seam, reference):
        _seam_owner[id(seam)] = _current.get("name")
        if _current.get("name") == "test_fails" and test.info.name == "test_softmax_naive":
            raise Boom("a hidden test's machinery")
        return real_run(test, seam, reference)

    monkeypatch.setattr(hidden_suites, "_outcome", run_test)
    real_results = TrackPools.results

    def results(self):
        for sandbox_run in real_results(self):
            _current["name"] = sandbox_run.submission.name
            yield sandbox_run

    monkeypatch.setattr(TrackPools, "results", results)
    try:
        first = grade(klass, base / "out", jobs=2, force=True)
        second = grade(klass, base / "out", jobs=2)  # the same failures are still there
    finally:
        monkeypatch.undo()
    solutions_as_submission(base / "clean" / "honest")
    clean = grade(base / "clean", base / "clean-out", jobs=1, force=True)
    return {"first": first, "second": second, "clean": clean, "out": base / "out", "clean_out": base / "clean-out"}


_seam_owner: dict[int, str] = {}
_current: dict[str, str] = {}


def by_name(summary):
    return {r.submission: r for r in summary.results}


def test_every_student_is_graded_and_the_class_reports_are_written(run):
    results = by_name(run["first"])
    assert set(results) == {"honest", *VICTIMS}
    assert (run["out"] / "gradebook.csv").read_text().count("\n") == 1 + len(results)
    assert (run["out"] / "summary.html").is_file()
    for name in set(VICTIMS) - {"write_fails"}:
        assert (run["out"] / name / "results.json").is_file(), name


@pytest.mark.parametrize("name", sorted(VICTIMS))
def test_each_failure_is_that_students_note(run, name):
    result = by_name(run["first"])[name]
    honest = by_name(run["first"])["honest"]
    kinds = {note.kind for note in result.integrity}
    if VICTIMS[name]:
        assert VICTIMS[name] in kinds
    if name in ("read_fails", "grading_fails"):
        assert result.score == 0 and all(t.status == "error" for t in result.tests)  # no grade without the work
    elif name == "test_fails":
        softmax = {t.id: t for t in result.tests}["sec3_3_simple_attention::test_softmax_naive"]
        assert softmax.status == "error" and softmax.points == 0
        assert result.score == honest.score - softmax.max_points
    else:  # a stage that decides no points: the score stands
        assert result.score == honest.score == honest.max_score


def test_the_honest_student_is_untouched(run):
    for name in ("results.json", "feedback.md", "feedback.html"):
        assert (run["out"] / "honest" / name).read_bytes() == (run["clean_out"] / "honest" / name).read_bytes()


def test_a_rerun_does_not_repeat_the_crashes(run):
    """The failures are still there on the rerun: the results written the first time are reused
    (only write_fails, whose results.json could not be written, is graded again)."""
    first, second = by_name(run["first"]), by_name(run["second"])
    assert run["second"].reused == len(first) - 1 and run["second"].graded == 1
    for name, result in second.items():
        assert result.score == first[name].score
        assert [n.kind for n in result.integrity] == [n.kind for n in first[name].integrity]
