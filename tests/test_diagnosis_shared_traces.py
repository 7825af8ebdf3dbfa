"""Shared traces (Diagnoser.trace_plan): failing tests that one known-buggy variant explains and whose
probes run the same functions of the code under test are traced once. Each test that borrows a
trace must get exactly the diagnosis its own trace gives: the same causes, checkpoint and line.

Checked on code nobody listed for it: every PyTorch buggy submission, the example class and a
sample of the AST mutant corpus (benchmarks/mutation.py), singles and pairs. Student code runs in
this process: these are all our own files.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import diagnosis as benchmark
from in_process import grade_each, read_sources, trace_probes
from mutation import single_mutants

from grader.diagnosis import Diagnoser
from grader.diagnosis.known_variants import KnownVariants
from grader.probe_outputs import ProbeOutputs
from grader.records import TestOutcome as Outcome
from tests.buggy import all_buggy
from tests.conftest import ROOT


def _folders(tmp_path: Path) -> list[Path]:
    buggy = [benchmark.Case(b.name, "buggy", dict(b.sources), []) for b in all_buggy("pytorch")]
    students = [p for p in sorted((ROOT / "examples" / "class").iterdir()) if p.is_dir()]
    mutants = random.Random(7).sample([m for m in single_mutants() if m.label], 40)
    singles = benchmark.single_cases(mutants)
    pairs = [
        benchmark.Case(f"pair-{i}", "pair", {**a.sources, **b.sources}, a.labels + b.labels)
        for i, (a, b) in enumerate(zip(singles[::2], singles[1::2]))
        if set(a.sources).isdisjoint(b.sources)
    ]
    original = benchmark.solution_sources()
    folders = []
    for case in (
        buggy
        + [benchmark.Case(p.name, "buggy", {f.stem: f.read_text() for f in p.glob("*.py")}, []) for p in students]
        + singles
        + pairs
    ):
        folder = tmp_path / f"case{len(folders):03d}"
        folder.mkdir()
        for module, text in original.items():
            (folder / f"{module}.py").write_text(case.sources.get(module, text))
        folders.append(folder)
    return folders


def _diagnosed(
    diagnoser: Diagnoser, outcomes: list[Outcome], seam: ProbeOutputs, uses, sources, documents, shared
) -> dict[str, tuple]:
    fresh = [replace(outcome, misconception=None, diagnosis=None) for outcome in outcomes]
    fresh = diagnoser.diagnose_submission(fresh, seam, uses, sources, documents, shared)
    return {o.id: (o.misconception, o.diagnosis) for o in fresh if o.status != "passed"}


def test_a_test_that_borrows_a_trace_gets_the_diagnosis_its_own_trace_gives(tmp_path):
    folders = _folders(tmp_path)
    borrowed, submissions, differ = 0, 0, []

    def check(diagnoser: Diagnoser, folder: Path, seam: ProbeOutputs, outcomes: list[Outcome], uses) -> None:
        nonlocal borrowed, submissions
        sources = read_sources(folder)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses, sources)
        if not shared:
            return
        if set(traced) & set(shared) or not set(shared.values()) <= set(traced):
            differ.append(f"{folder.name}: a probe both traced and shared, or sharing an untraced one")
        documents = trace_probes(folder, traced + sorted(shared))
        planned = _diagnosed(
            diagnoser, outcomes, seam, uses, sources, {name: documents[name] for name in traced}, shared
        )
        alone = _diagnosed(diagnoser, outcomes, seam, uses, sources, documents, {})
        differ.extend(f"{folder.name} {test}" for test in alone if planned.get(test) != alone[test])
        borrowed += len(shared)
        submissions += 1

    grade_each(folders, check)
    assert not differ
    assert submissions >= 30 and borrowed >= 80  # the check above ran on many shared traces


def test_tests_of_different_functions_or_causes_never_share_a_trace():
    """SelfAttention_v1 and _v2 (one missing scaling each) are traced apart; so are tests no variant
    explains (carol's MultiHeadAttentionWrapper)."""
    from grader.diagnosis import code_path

    assert code_path("sec3_4_self_attention:v1_transplanted") != code_path("sec3_4_self_attention:v2_transplanted")
    assert code_path("sec3_6_multi_head_attention:wrapper_forward") != code_path(
        "sec3_6_multi_head_attention:mha_forward"
    )
    # a seeded run (parameters as the constructor made them) never stands for a transplanted one
    assert code_path("sec3_5_causal_attention:book_seed")[1] and not code_path("sec3_5_causal_attention:causality")[1]


def test_a_variant_is_matched_once_per_test_and_forgotten_with_the_submission(monkeypatch):
    """The plan and the diagnosis both ask which variant a failing test's outputs equal: the answer
    is worked out once, and kept only as long as the submission's outputs are."""
    import gc

    folder = ROOT / "examples" / "class" / "carol"
    asked: list[str] = []
    real = KnownVariants._first_equal
    monkeypatch.setattr(
        KnownVariants,
        "_first_equal",
        lambda self, outcome, student: asked.append(outcome.id) or real(self, outcome, student),
    )
    kept, diagnosers = [], []

    def check(diagnoser: Diagnoser, folder: Path, seam: ProbeOutputs, outcomes: list[Outcome], uses) -> None:
        diagnosers.append(diagnoser)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses)
        kept.append(diagnoser.diagnose_submission(outcomes, seam, uses, read_sources(folder), {}, shared))

    grade_each([folder], check)
    failing = [o.id for o in kept[0] if o.status != "passed"]
    assert failing and sorted(asked) == sorted(failing)
    gc.collect()
    assert len(diagnosers[0].known_variants._known) == 0
