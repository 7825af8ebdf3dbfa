"""Batch isolation: no exception path from one submission's data to the class.

A submission is routed to a track by what its code *needs*: an `import mindspore` that an
`except ImportError` catches (or that runs only where MindSpore is found) decides nothing. A
submission that does need MindSpore, graded by a kit installed without the `mindspore` extra, is
that student's note and `error` results; the class goes on. And whatever fails for one submission
anywhere in the trusted session (routing, its track's reference, its sandbox results, its trace,
its diagnosis) ends that submission only: a note, every check an `error`, everyone else
bit-identical to a clean run, the class reports written.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grader.answer_key as answer_key
import grader.run.grading as grading
import grader.run.plan as plan
import grader.run.stages as stages
from grader import frameworks
from grader.frameworks import MINDSPORE, PYTORCH, track_of
from grader.i18n import Catalog
from grader.run import grade
from grader.sandbox import pool as sandbox_pool
from grader.sandbox import tracks as sandbox_tracks
from grader.sandbox.tracks import TrackPools
from tests.conftest import MODULES, ROOT, mindspore_solutions_as_submission, solutions_as_submission

WITHOUT_MINDSPORE = ROOT / "tests" / "attacks" / "round3" / "without_mindspore.py"
REPORTS = ("results.json", "feedback.md", "feedback.html")

# Ways a module can use MindSpore only where it is installed: none makes it need MindSpore.
OPTIONAL = [
    "try:\n    import mindspore\nexcept ImportError:\n    pass\n",
    "try:\n    import mindspore as ms\nexcept ModuleNotFoundError:\n    ms = None\n",
    "try:\n    from mindspore import nn\nexcept Exception:\n    nn = None\n",
    "try:\n    import mindspore\nexcept:\n    mindspore = None\n",
    "try:\n    import mindspore\nexcept (OSError, ImportError):\n    HAS_MS = False\nelse:\n"
    "    import mindspore.ops as ops\n    HAS_MS = True\n",
    "try:\n    import mindspore\n    HAS_MS = True\nexcept ImportError:\n    HAS_MS = False\nif HAS_MS:\n"
    "    from mindspore import ops\n",
    "import importlib.util\nif importlib.util.find_spec('mindspore') is not None:\n    import mindspore\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mindspore import Tensor\n",
    "def backend():\n    try:\n        import mindspore\n    except ImportError:\n        return None\n"
    "    return mindspore\n",
    "if __name__ == '__main__':\n    import mindspore\n    print(mindspore.__version__)\n",
]
# Ways a module cannot be imported without MindSpore.
NEEDED = [
    "import mindspore\n",
    "import mindspore as ms\n",
    "from mindspore import nn, ops\n",
    "def construct(x):\n    import mindspore.ops as ops\n    return ops.relu(x)\n",
    "try:\n    import mindspore\nexcept ImportError:\n    raise SystemExit('pip install mindspore')\n",
    "try:\n    import mindspore\nexcept ImportError:\n    sys.exit('this module needs MindSpore')\n",
    "try:\n    import mindspore\nexcept ValueError:\n    pass\n",
    "if __name__ == '__main__':\n    pass\nelse:\n    import mindspore\n",
    "try:\n    import mindspore\nfinally:\n    pass\n",
    "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nimport mindspore\n",
]
GUARD = OPTIONAL[0]  # what an honest PyTorch student pasted at the top of every module


def torch_sources() -> dict[str, str]:
    return {
        module: re.sub(
            r"^from \.(\w+) import", r"from \1 import", (ROOT / "solutions" / f"{module}.py").read_text(), flags=re.M
        )
        for module in MODULES
    }


# -- routing by what the code needs ----------------------------------------------------------------


@given(st.lists(st.tuples(st.sampled_from(MODULES), st.sampled_from(OPTIONAL)), min_size=1))
@settings(max_examples=60)
def test_an_optional_mindspore_import_never_makes_a_pytorch_submission_mindspore(guards):
    sources = torch_sources()
    for module, guard in guards:
        sources[module] = guard + sources[module]
    assert track_of(sources) == PYTORCH
    assert track_of({module: GUARD + source for module, source in torch_sources().items()}) == PYTORCH


@given(
    st.lists(st.sampled_from(NEEDED), min_size=1, max_size=4),
    st.lists(st.sampled_from(OPTIONAL), max_size=4),
    st.integers(0, 4),
    st.integers(0, 4),
)
@settings(max_examples=100)
def test_needed_imports_decide_by_the_majority_rule_and_optional_ones_count_as_nothing(
    needed, optional, torch_only, both
):
    """MindSpore when more modules need mindspore than need torch without it; a module whose
    mindspore import is optional is a torch-only module."""
    sources = {f"ms{i}": line for i, line in enumerate(needed)}
    sources |= {f"opt{i}": "import torch\n" + line for i, line in enumerate(optional)}
    sources |= {f"pt{i}": "import torch\n" for i in range(torch_only)}
    sources |= {f"both{i}": "import torch\n" + NEEDED[0] for i in range(both)}
    expected = MINDSPORE if len(needed) + both > len(optional) + torch_only else PYTORCH
    assert track_of(sources) == expected


@pytest.mark.parametrize("line", NEEDED)
def test_a_module_that_needs_mindspore_is_still_a_mindspore_module(line):
    assert frameworks.needs_mindspore(line)
    # a module that does not parse: an unindented import is known to be needed, nothing else
    unindented = re.search(r"^(import|from) mindspore", line, re.M) is not None
    assert frameworks.needs_mindspore(line + "def broken(:\n") == unindented


@pytest.mark.parametrize("line", OPTIONAL)
def test_an_optional_import_is_not_needed_even_in_a_module_that_does_not_parse(line):
    assert not frameworks.needs_mindspore(line)
    assert not frameworks.needs_mindspore(line + "def broken(:\n")


# -- a kit installed without the mindspore extra ---------------------------------------------------


def grade_without_mindspore(klass: Path, out: Path, lang: str = "en") -> subprocess.CompletedProcess:
    """`grade` as on a kit installed without the extra: the trusted process sees no MindSpore at all."""
    return subprocess.run(
        [
            sys.executable,
            str(WITHOUT_MINDSPORE),
            str(klass),
            "--out",
            str(out),
            "--quiet",
            "--jobs",
            "2",
            "--lang",
            lang,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1500,
    )


def documents(out: Path) -> dict[str, dict]:
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8")) for path in out.glob("*/results.json")}


@pytest.fixture(scope="module")
def without_mindspore(tmp_path_factory):
    base = tmp_path_factory.mktemp("without-mindspore")
    klass = base / "class"
    for name in ("a_honest", "z_later"):
        solutions_as_submission(klass / name)
        solutions_as_submission(base / "clean" / name)
    for module in solutions_as_submission(klass / "b_guarded").glob("*.py"):
        module.write_text(GUARD + module.read_text())
    mindspore_solutions_as_submission(klass / "c_mindspore")
    return {
        "run": grade_without_mindspore(klass, base / "out"),
        "out": base / "out",
        "clean": grade_without_mindspore(base / "clean", base / "clean-out"),
        "clean_out": base / "clean-out",
        "zh": grade_without_mindspore(klass, base / "zh-out", "zh"),
        "zh_out": base / "zh-out",
    }


def test_the_kit_without_mindspore_grades_the_whole_class_and_writes_its_reports(without_mindspore):
    run = without_mindspore["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    out = without_mindspore["out"]
    assert set(documents(out)) == {"a_honest", "b_guarded", "c_mindspore", "z_later"}
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert [row["student"] for row in rows] == ["a_honest", "b_guarded", "c_mindspore", "z_later"]
    assert (out / "summary.html").is_file()


def test_a_guarded_mindspore_import_is_graded_on_the_pytorch_track_with_full_marks(without_mindspore):
    docs = documents(without_mindspore["out"])
    guarded, honest = docs["b_guarded"], docs["a_honest"]
    assert guarded["track"] == "pytorch" and not guarded["integrity"]
    assert guarded["score"] == guarded["max_score"] == honest["score"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_submission_that_needs_mindspore_is_told_why_none_of_its_checks_ran(without_mindspore, lang):
    run, out = (
        (without_mindspore["run"], without_mindspore["out"])
        if lang == "en"
        else (without_mindspore["zh"], without_mindspore["zh_out"])
    )
    assert run.returncode == 0, run.stderr[-3000:]
    document = documents(out)["c_mindspore"]
    catalog = Catalog(lang)
    assert document["track"] == "mindspore" and document["score"] == 0 < document["max_score"]
    assert {(t["status"], t["points"], t["message"]) for t in document["tests"]} == {
        ("error", 0, catalog.t("internal.mindspore-missing"))
    }
    assert {"kind": "grader.mindspore-missing", "detail": "mindspore"} in document["integrity"]
    feedback = (out / "c_mindspore" / "feedback.md").read_text(encoding="utf-8")
    assert catalog.t("integrity.grader.mindspore-missing").split("`")[0] in feedback
    assert "`make mindspore`" in catalog.t("integrity.grader.mindspore-missing")
    assert catalog.t("report.start.title") not in feedback  # no "nothing in this section works yet"
    assert catalog.t("report.next-step-title") not in feedback


def test_without_mindspore_the_other_students_are_bit_identical_to_a_clean_run(without_mindspore):
    for run in ("run", "clean"):
        assert without_mindspore[run].returncode == 0, without_mindspore[run].stderr[-3000:]
    for name in ("a_honest", "z_later"):
        for report in REPORTS:
            assert (without_mindspore["out"] / name / report).read_bytes() == (
                without_mindspore["clean_out"] / name / report
            ).read_bytes(), (name, report)


def test_no_mindspore_worker_starts_where_the_kit_has_no_mindspore(tmp_path, monkeypatch):
    """The kit's one "is MindSpore there" question (`frameworks.available`) says no: no MindSpore
    worker is started (it would fail to warm up), the student is refused before the sandbox."""
    started = []
    real = sandbox_tracks.SandboxPool.__init__

    def spy(self, jobs, *args, flavour="torch", **kwargs):
        started.append(flavour)
        real(self, jobs, *args, flavour=flavour, **kwargs)

    monkeypatch.setattr(sandbox_tracks.SandboxPool, "__init__", spy)
    monkeypatch.setattr(frameworks, "available", lambda track: track != MINDSPORE)
    solutions_as_submission(tmp_path / "class" / "torch")
    mindspore_solutions_as_submission(tmp_path / "class" / "ms")
    results = {r.submission: r for r in grade(tmp_path / "class", tmp_path / "out", jobs=2, force=True).results}
    assert started == ["torch"]
    assert results["torch"].score == results["torch"].max_score
    assert [note.kind for note in results["ms"].integrity] == ["grader.mindspore-missing"]


# -- any failure for one submission ends that submission only --------------------------------------


class Boom(Exception):
    pass


ROUTE_MARK = "# routed by a kit that fails on this line\n"
VICTIMS = {  # student -> the stage that fails for them (the note's detail)
    "routing_fails": "routing: Boom",
    "reference_fails": "suites: Boom",  # a MindSpore student: its track's reference cannot be computed
    "results_fail": "results: Boom",
    "follow_up_fails": "grading: Boom",
    "trace_fails": "diagnosis: Boom",
}
BUG = ("return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)", "return torch.exp(x)")  # traced


def failing_student(folder: Path) -> Path:
    solutions_as_submission(folder)
    module = folder / "sec3_3_simple_attention.py"
    assert BUG[0] in module.read_text()
    module.write_text(module.read_text().replace(BUG[0], BUG[1]))
    return folder


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    base = tmp_path_factory.mktemp("isolated")
    klass = base / "class"
    for name in ("a_honest", "z_later"):
        solutions_as_submission(klass / name)
        solutions_as_submission(base / "clean" / name)
    solutions_as_submission(klass / "results_fail")
    for module in solutions_as_submission(klass / "routing_fails").glob("*.py"):
        module.write_text(ROUTE_MARK + module.read_text())
    for module in solutions_as_submission(klass / "guarded").glob("*.py"):
        module.write_text(GUARD + module.read_text())
    mindspore_solutions_as_submission(klass / "reference_fails")
    for name in ("follow_up_fails", "trace_fails", "m_failing"):
        failing_student(klass / name)
    failing_student(base / "clean" / "m_failing")

    owner: dict[int, str] = {}  # id of a run's results -> its student
    monkeypatch = pytest.MonkeyPatch()
    real_results, real_screened, real_documents = TrackPools.results, stages.screened, grading.documents_of
    real_follow_up, real_track_of = TrackPools.follow_up, sandbox_tracks.track_of
    traced: list[str] = []

    def results(self):
        for run in real_results(self):
            owner[id(run.results)] = run.submission.name
            yield run

    def screened(results):
        if owner.get(id(results)) == "results_fail":
            raise Boom("screening")
        return real_screened(results)

    def documents(results, digests=None):
        traced.append(owner.get(id(results)))
        if owner.get(id(results)) == "trace_fails":
            raise Boom("trace")
        return real_documents(results, digests)

    def follow_up(self, run, *args, **kwargs):
        if run.submission.name == "follow_up_fails":
            raise Boom("follow-up")
        return real_follow_up(self, run, *args, **kwargs)

    def route(sources):
        if any(ROUTE_MARK in source for source in sources.values()):
            raise Boom("routing")
        return real_track_of(sources)

    def seeded():
        raise Boom("the MindSpore reference")

    monkeypatch.setattr(TrackPools, "results", results)
    monkeypatch.setattr(stages, "screened", screened)
    monkeypatch.setattr(grading, "documents_of", documents)
    monkeypatch.setattr(TrackPools, "follow_up", follow_up)
    for module in (plan, sandbox_tracks, sandbox_pool):  # wherever the kit routes
        monkeypatch.setattr(module, "track_of", route, raising=False)
    monkeypatch.setattr(answer_key, "mindspore_seeded_results", seeded)
    # a kit whose own cache does not hold the answer key yet: the MindSpore reference is computed (and fails)
    monkeypatch.setattr(grading, "KIT_CACHE", base / "empty-kit-cache")
    try:
        first = grade(klass, base / "out", jobs=2, force=True)
    finally:
        monkeypatch.undo()
    clean = grade(base / "clean", base / "clean-out", jobs=2, force=True)
    return {
        "first": {r.submission: r for r in first.results},
        "out": base / "out",
        "clean": clean,
        "clean_out": base / "clean-out",
        "traced": traced,
    }


def test_every_student_is_graded_and_the_class_reports_are_written(isolated):
    names = {"a_honest", "z_later", "guarded", "m_failing", *VICTIMS}
    assert set(isolated["first"]) == names
    rows = list(csv.DictReader(io.StringIO((isolated["out"] / "gradebook.csv").read_text(encoding="utf-8"))))
    assert {row["student"] for row in rows} == names
    assert (isolated["out"] / "summary.html").is_file()
    assert {"m_failing", "trace_fails"} <= set(isolated["traced"])  # the trace stage was reached


@pytest.mark.parametrize("name", sorted(VICTIMS))
def test_a_failure_for_one_submission_is_that_submissions_note_and_errors(isolated, name):
    result = isolated["first"][name]
    assert ("grader.failed", VICTIMS[name]) in [(note.kind, note.detail) for note in result.integrity]
    assert result.score == 0 and {t.status for t in result.tests} == {"error"}
    assert {str(t.message) for t in result.tests} == {Catalog("en").t("internal.grading-failed")}
    document = json.loads((isolated["out"] / name / "results.json").read_text(encoding="utf-8"))
    assert {"kind": "grader.failed", "detail": VICTIMS[name]} in document["integrity"]


def test_the_others_are_bit_identical_to_a_clean_run(isolated):
    for name in ("a_honest", "z_later", "m_failing"):
        for report in REPORTS:
            assert (isolated["out"] / name / report).read_bytes() == (
                isolated["clean_out"] / name / report
            ).read_bytes(), (name, report)


def test_a_guarded_import_on_a_kit_with_mindspore_is_still_a_pytorch_submission(isolated):
    guarded, honest = isolated["first"]["guarded"], isolated["first"]["a_honest"]
    assert guarded.track == "pytorch" and guarded.score == guarded.max_score == honest.score
    assert [(t.id, t.status) for t in guarded.tests] == [(t.id, t.status) for t in honest.tests]
