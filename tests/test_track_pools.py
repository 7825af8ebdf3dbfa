"""Each track's submissions go to workers warmed up for it (grader/sandbox/tracks.py), and a
track's workers start only when the class has submissions of it: a PyTorch-only class starts no
MindSpore worker."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from grader.intake.discovery import read_submission
from grader.run import grade
from grader.run.plan import Plan, Planned
from grader.sandbox import tracks
from grader.sandbox.pool import Limits
from tests.conftest import ROOT, mindspore_solutions_as_submission, solutions_as_submission

needs_mindspore = pytest.mark.skipif(importlib.util.find_spec("mindspore") is None, reason="the mindspore extra")
PROBE = "sec3_3_simple_attention:attention_scores"


@pytest.fixture
def started(monkeypatch):
    """(flavour, workers) of every SandboxPool started, in order."""
    calls = []
    real = tracks.SandboxPool.__init__

    def spy(self, jobs, *args, flavour="torch", **kwargs):
        calls.append((flavour, jobs))
        real(self, jobs, *args, flavour=flavour, **kwargs)

    monkeypatch.setattr(tracks.SandboxPool, "__init__", spy)
    return calls


def test_a_pytorch_class_starts_only_torch_workers(tmp_path, started):
    for name in ("a", "b", "c"):
        solutions_as_submission(tmp_path / "class" / name)
    summary = grade(tmp_path / "class", tmp_path / "out", jobs=2, force=True)
    assert [flavour for flavour, _ in started] == ["torch"]
    assert {r.track for r in summary.results} == {"pytorch"}
    assert all(r.score == r.max_score for r in summary.results)


def _plan(**per_track: int) -> Plan:
    to_grade = [
        Planned(i, f"s{i}", Path(f"s{i}"), "", "", track)
        for i, track in enumerate(t for t, count in per_track.items() for _ in range(count))
    ]
    return Plan((), tuple(to_grade), (), tuple(p.name for p in to_grade), {}, "")


def test_a_worker_beyond_the_free_cores_starts_only_for_a_class_that_wins_its_start_back():
    """Measured on 2 cores (grader/run/plan.py): a second PyTorch worker pays off from about 32
    submissions, a second MindSpore worker from about 12; below that one worker is faster."""
    assert _plan(pytorch=3).workers(jobs=2, cores=2) == {"pytorch": 1}
    assert _plan(pytorch=32).workers(jobs=2, cores=2) == {"pytorch": 1}
    assert _plan(pytorch=33).workers(jobs=2, cores=2) == {"pytorch": 2}
    assert _plan(pytorch=1000).workers(jobs=2, cores=2) == {"pytorch": 2}
    assert _plan(pytorch=1000).workers(jobs=1, cores=2) == {"pytorch": 1}
    assert _plan(mindspore=12, pytorch=13).workers(jobs=2, cores=2) == {"mindspore": 1, "pytorch": 1}
    assert _plan(mindspore=13).workers(jobs=2, cores=2) == {"mindspore": 2}
    # with cores to spare, as many workers as they allow (one core is the trusted process's)
    assert _plan(pytorch=3).workers(jobs=8, cores=8) == {"pytorch": 3}
    assert _plan(pytorch=40).workers(jobs=8, cores=8) == {"pytorch": 7}
    assert _plan(pytorch=400).workers(jobs=8, cores=8) == {"pytorch": 8}
    assert _plan(pytorch=5).workers(jobs=8, cores=1) == {"pytorch": 1}


@needs_mindspore
def test_a_mixed_class_starts_one_pool_per_track(tmp_path, started):
    solutions_as_submission(tmp_path / "class" / "torch-student")
    mindspore_solutions_as_submission(tmp_path / "class" / "ms-student")
    summary = grade(tmp_path / "class", tmp_path / "out", jobs=2, force=True)
    assert sorted(started) == [("mindspore", 1), ("torch", 1)]
    tracks = {r.submission: r.track for r in summary.results}
    assert tracks == {"torch-student": "pytorch", "ms-student": "mindspore"}
    assert all(r.score == r.max_score for r in summary.results)


@needs_mindspore
def test_a_track_the_class_was_not_thought_to_have_gets_its_workers_when_it_arrives(tmp_path, started):
    """A submission that changed between the two reads (a student handing in late) is still graded
    on its track: its pool starts then, with slots (uids) of its own."""
    torch_student = read_submission(solutions_as_submission(tmp_path / "torch-student"))
    ms_student = read_submission(mindspore_solutions_as_submission(tmp_path / "ms-student"))
    with tracks.TrackPools({"pytorch": 1}, Limits(), probes=[PROBE]) as pool:
        assert set(pool.pools) == {"pytorch"}
        jobs = [pool.submit(torch_student), pool.submit(ms_student)]
        runs = {run.submission.path.name: run for run in pool.results()}
        assert len(set(jobs)) == 2 and sorted(run.job for run in runs.values()) == sorted(jobs)  # one stream
        assert pool.pools["mindspore"].uid_base != pool.pools["pytorch"].uid_base
    assert started == [("torch", 1), ("mindspore", 1)]
    assert {name: run.track for name, run in runs.items()} == {"torch-student": "pytorch", "ms-student": "mindspore"}
    assert all(isinstance(run.results[PROBE], dict) for run in runs.values()), runs


@needs_mindspore
def test_in_a_mixed_class_each_students_second_pass_comes_back_to_them(tmp_path):
    """Failing students of both tracks have their failed probes run again (traced) in their own
    track's pool: the results stream of both pools must hand each back to its own submission."""
    import shutil

    for name, source in (
        ("bob", ROOT / "examples" / "class" / "bob"),
        ("mei", ROOT / "examples" / "mindspore-class" / "mei"),
        ("carol", ROOT / "examples" / "class" / "carol"),
    ):
        shutil.copytree(source, tmp_path / "class" / name)
    mixed = {r.submission: r for r in grade(tmp_path / "class", tmp_path / "out", jobs=2, force=True).results}
    for name in ("bob", "mei", "carol"):
        alone = grade(tmp_path / "class" / name, tmp_path / "alone" / name, jobs=1, force=True).results[0]
        assert mixed[name].score == alone.score and mixed[name].track == alone.track
        assert [(t.id, t.status, t.misconception) for t in mixed[name].tests] == [
            (t.id, t.status, t.misconception) for t in alone.tests
        ]
    assert {mixed["bob"].track, mixed["mei"].track} == {"pytorch", "mindspore"}


def test_unknown_tracks_and_too_many_workers_are_refused():
    with pytest.raises(ValueError, match="unknown tracks"):
        tracks.TrackPools({"jax": 1})
    with pytest.raises(ValueError, match="at most"):
        tracks.TrackPools({"pytorch": 9, "mindspore": 9})
