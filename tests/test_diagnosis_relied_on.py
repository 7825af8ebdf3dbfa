"""Tests that rely on a broken earlier section are not traced (Diagnoser.departs_where_it_relies).

A test marked as using tests of an earlier section (the 3.6 wrapper runs 3.5's CausalAttention,
Exercise 3.2 the wrapper, Exercise 3.3 MultiHeadAttention) that fail, on student code that takes
the same lines for every input, reaches that section's mistake on the same line as the section's
own tests: its trace would only say it again, at a cost (the wrapper's probes run three to five
times the ops of 3.5's). It is blamed on that section, with the diagnosis of that section's own
tests. Checked on every generated single mutant of sections 3.5 and 3.6 (benchmarks/mutation.py):
the mistake is in that section, and nothing else may be blamed or shown. Student code runs in this
process: these are all our own files.
"""
from __future__ import annotations

import copy
import sys

import pytest

from grader.diagnosis import Diagnoser, variant_runs
from grader.diagnosis.blame import attribute_to_earlier_sections
from grader.diagnosis.inprocess import read_sources, run_probes, trace_probes
from grader.suites.plugin import GradingPlugin, run_suites
from grader.suites.seam import Seam, reference_results
from tests.conftest import ROOT

sys.path.append(str(ROOT / "benchmarks"))  # last: its files never shadow a package
from mutation import single_mutants  # noqa: E402
from mutation_source import solution_sources  # noqa: E402

EARLIER = ("sec3_5_causal_attention", "sec3_6_multi_head_attention")


@pytest.fixture(scope="module")
def relying(tmp_path_factory):
    """For each mutant of an earlier section: (mutant, its failing outcomes as the report shows them,
    the tests not traced because they rely on a failing test -> the tests they use, the traced probes)."""
    original = solution_sources()
    mutants = {}
    for index, mutant in enumerate(m for m in single_mutants() if m.module in EARLIER):
        folder = tmp_path_factory.mktemp(f"mutant{index:03d}")
        for module, source in original.items():
            (folder / f"{module}.py").write_text(mutant.source if module == mutant.module else source)
        mutants[folder] = mutant
    reference = Seam(reference_results())
    diagnoser = Diagnoser(reference, variant_runs())
    found = []

    def check(folder, seam, outcomes):
        uses = {info.id: info.uses for info in plugin.infos}
        sources = read_sources(folder)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses, sources)
        skipped = {o.id for o in outcomes if o.status != "passed"
                   and diagnoser.departs_where_it_relies(o, outcomes, uses, sources)}
        shown = copy.deepcopy(outcomes)
        diagnoser.diagnose_submission(shown, seam, uses, sources, trace_probes(folder, traced), shared)
        attribute_to_earlier_sections(shown, uses)
        failing = [o for o in shown if o.status != "passed"]
        found.append((mutants[folder], failing, {test: uses.get(test, ()) for test in skipped}, traced))

    def source():
        for folder in mutants:
            yield folder, Seam(run_probes(folder))

    plugin = GradingPlugin(reference, source(), check)
    run_suites(plugin)
    return found


def test_a_test_relying_on_a_broken_section_is_blamed_on_it_and_shows_its_own_tests_diagnosis(relying):
    skipped_tests = 0
    for mutant, failing, skipped, traced in relying:
        by_id = {o.id: o for o in failing}
        for test in skipped:
            outcome = by_id[test]
            skipped_tests += 1
            assert not any(probe in traced for probe in outcome.probes), (mutant.detail, test)
            assert outcome.blocked_by == mutant.module, (mutant.detail, test, outcome.blocked_by)
            assert outcome.misconception is None  # the section's own tests name it
            own = [o.diagnosis for o in failing if o.module == mutant.module and o.id not in skipped]
            assert outcome.diagnosis is None or outcome.diagnosis in own, (mutant.detail, test)
            located = [o for o in failing if o.id in skipped[test] and o.diagnosis is not None
                       and o.diagnosis.location is not None and o.diagnosis.location.file == f"{o.module}.py"]
            assert (outcome.diagnosis is not None) == bool(located), (mutant.detail, test)  # the line they show
    assert skipped_tests >= 200  # the wrapper, Exercise 3.2 and 3.3 really were left untraced


def test_the_broken_sections_own_tests_are_still_traced(relying):
    """Only tests of later modules rely on the mutated section: its own failing tests are traced
    (or share a trace), so its line is found where the mistake is."""
    for mutant, failing, skipped, traced in relying:
        assert all(test.split("::")[0] != mutant.module for test in skipped), mutant.detail
        if skipped:
            assert any(probe.split(":")[0] == mutant.module for probe in traced), mutant.detail
