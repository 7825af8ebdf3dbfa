"""The recogniser on code it was not written for, graded in process with traces of what failed.

- tests/submissions/shapes/<misconception>/<shape>/: each misconception written in code shapes that
  the buggy submissions (tests/submissions/buggy.toml) do not have (einsum, SDPA, bmm, torch.where,
  position masks...), the mistake's lines marked `# <- the mistake`: named, nothing else named,
  every failed check of the module located on a marked line;
- every existing buggy submission still named (with traces now), nothing else named in its module;
- the correct alternatives: full marks, no diagnosis;
- a sample of the AST mutant corpus of benchmarks/diagnosis.py.
Student code runs in this process: these are all our own files.
"""

from __future__ import annotations

import random

import diagnosis as benchmark
import pytest
from mutation import single_mutants

from grader.diagnosis.catalogue.misconceptions import CATALOGUE
from tests.buggy import all_buggy
from tests.conftest import ROOT

SHAPES = sorted(p for p in (ROOT / "tests" / "submissions" / "shapes").glob("*/*") if p.is_dir())
# The MindSpore track is not traced (its code calls no torch op): its buggy submissions and its own
# misconceptions are covered by tests/test_mindspore_grading.py and tests/test_mindspore_mutants.py.
BUGGY = all_buggy("pytorch")
# traps of MindSpore's API, and the trainable mask (a parameter count, not a value): each in two
# shapes on the MindSpore track (a buggy submission and a mutant)
MINDSPORE_ONLY = {"dim-not-axis", "dropout-keep-prob", "torch-api", "mask-trainable"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    cases = benchmark.shape_cases() + benchmark.correct_cases()
    for case in BUGGY:
        cases.append(benchmark.Case(f"buggy/{case.name}", "buggy", dict(case.sources), [case.misconception]))
    return {g.case.name: g for g in benchmark.grade(cases, tmp_path_factory.mktemp("recogniser"))}


def test_every_misconception_has_two_shapes_of_its_own():
    shapes: dict[str, int] = {}
    for folder in SHAPES:
        shapes[folder.parent.name] = shapes.get(folder.parent.name, 0) + 1
    assert set(shapes) == set(CATALOGUE) - MINDSPORE_ONLY
    assert min(shapes.values()) >= 2, shapes


@pytest.mark.parametrize("folder", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_new_code_shape_is_named_and_located(graded, folder):
    result = graded[f"{folder.parent.name}/{folder.name}"]
    assert result.loses_points
    assert result.named == [folder.parent.name], [(o.id, o.misconception) for o in result.outcomes if o.misconception]
    total, right, misses = benchmark.located(result)
    assert right == total, misses


@pytest.mark.parametrize("case", BUGGY, ids=lambda b: b.name)
def test_existing_buggy_submissions_are_still_named_with_traces(graded, case):
    result = graded[f"buggy/{case.name}"]
    cause = case.misconception
    modules = set(case.sources)
    named = [m for o in result.outcomes if o.module in modules and o.diagnosis for m in o.diagnosis.misconceptions]
    assert cause in named
    assert set(named) <= {cause}, named


def test_correct_alternatives_earn_full_marks_without_diagnosis(graded):
    correct = [g for g in graded.values() if g.case.kind == "correct"]
    assert len(correct) >= 8
    for result in correct:
        assert not result.loses_points, result.case.name
        assert not any(o.diagnosis or o.misconception for o in result.outcomes), result.case.name


def test_a_sample_of_the_mutant_corpus(tmp_path):
    """Twenty catalogued single mutants that lose points, five pairs and up to three pairs in one
    function: named, located, honest (a pair: both causes named, no other)."""
    mutants = [m for m in single_mutants() if m.label]
    sample = random.Random(2024).sample(mutants, 24)
    graded = benchmark.grade(benchmark.single_cases(sample), tmp_path / "singles")
    losing = [g for g in graded if g.loses_points]
    assert len(losing) >= 15
    named = [g for g in losing if g.named == [g.case.labels[0]]]
    assert len(named) >= 0.85 * len(losing), [(g.case.detail, g.named) for g in losing if g not in named]
    totals = [benchmark.located(g) for g in losing]
    assert sum(t[1] for t in totals) >= 0.9 * sum(t[0] for t in totals), [t[2] for t in totals if t[2]]
    assert not any(o.diagnosis for g in graded if not g.loses_points for o in g.outcomes)
    by_name = {case.name: mutant for case, mutant in zip(benchmark.single_cases(sample), sample)}
    cases = benchmark.pair_cases(graded, by_name, 5, 7) + benchmark.pair_cases(graded, by_name, 3, 7, stacked=True)
    pairs = benchmark.grade(cases, tmp_path / "pairs")
    both = [g for g in pairs if all(label in g.named for label in g.case.labels)]
    assert pairs and len(both) >= len(pairs) - 1, [(g.case.detail, g.named) for g in pairs if g not in both]
    false = [(g.case.detail, g.named) for g in pairs if not set(g.named) <= set(g.case.labels)]
    assert false == []  # two mistakes: their causes, and no cause that fits neither
