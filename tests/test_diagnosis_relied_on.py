"""Tests that rely on a broken earlier section are not traced (Diagnoser.departs_where_it_relies).

A test marked as using tests of an earlier section (the 3.6 wrapper runs 3.5's CausalAttention,
Exercise 3.2 the wrapper, Exercise 3.3 MultiHeadAttention) that fail, with wrong values that no
variant of its own explains, on student code that uses that section and takes the same lines for
every input, reaches that section's mistake on the same line as the section's own tests: its trace
would only say it again, at a cost (the wrapper's probes run three to five times the ops of 3.5's).
It is blamed on that section, with the diagnosis of that section's own tests. Checked on every
generated single mutant of sections 3.5 and 3.6 (benchmarks/mutation.py): the mistake is in that
section, and nothing else may be blamed or shown; and on mistakes of the wrapper's own beside one
in 3.5, which are traced as before. Student code runs in this process: these are all our own files.
"""

from __future__ import annotations

import pytest
from in_process import grade_each, read_sources, trace_probes
from mutation import single_mutants
from mutation_source import solution_sources

from grader.diagnosis.blame import attribute_to_earlier_sections

EARLIER = ("sec3_5_causal_attention", "sec3_6_multi_head_attention")
CAUSAL, MHA = EARLIER
WRAPPER = "sec3_6_multi_head_attention::test_wrapper_matches_reference"


def _shown(diagnoser, outcomes, seam, uses, sources, documents, shared) -> list:
    """The failing outcomes as the report shows them (diagnosis, then blame on earlier sections)."""
    shown = diagnoser.diagnose_submission(list(outcomes), seam, uses, sources, documents, shared)
    shown = attribute_to_earlier_sections(shown, uses)
    return [o for o in shown if o.status != "passed"]


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
    found = []

    def check(diagnoser, folder, seam, outcomes, uses):
        sources = read_sources(folder)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses, sources)
        skipped = {
            o.id
            for o in outcomes
            if o.status != "passed" and diagnoser.departs_where_it_relies(o, outcomes, seam, uses, sources)
        }
        failing = _shown(diagnoser, outcomes, seam, uses, sources, trace_probes(folder, traced), shared)
        found.append((mutants[folder], failing, {test: uses.get(test, ()) for test in skipped}, traced))

    grade_each(list(mutants), check)
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
            located = [
                o
                for o in failing
                if o.id in skipped[test]
                and o.diagnosis is not None
                and o.diagnosis.location is not None
                and o.diagnosis.location.file == f"{o.module}.py"
            ]
            assert (outcome.diagnosis is not None) == bool(located), (mutant.detail, test)  # the line they show
    # value failures of the wrapper and the exercises left untraced: 97 when written, 2 since those checks
    # are judged against what the student's own earlier classes give (docs/grading-policy.md)
    assert skipped_tests >= 2


def test_the_broken_sections_own_tests_are_still_traced(relying):
    """Only tests of later modules rely on the mutated section: its own failing tests are traced
    (or share a trace), so its line is found where the mistake is."""
    for mutant, _failing, skipped, traced in relying:
        assert all(test.split("::")[0] != mutant.module for test in skipped), mutant.detail
        if skipped:
            assert any(probe.split(":")[0] == mutant.module for probe in traced), mutant.detail


# Two mistakes, one in 3.5 and one of the wrapper's own: the wrapper's failure is not 3.5's
# (found by a fresh-eyes attack). Each edit: (module, the reference's text, the student's).
NO_SCALING = (
    CAUSAL,
    "torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)  # (b, T, T)",
    "torch.softmax(attn_scores, dim=-1)  # (b, T, T)",
)
BOOK_MASK = (
    CAUSAL,
    "torch.triu(torch.ones(context_length, context_length), diagonal=1)",
    "torch.triu(torch.ones(6, 6), diagonal=1)",
)  # wrong only past 6 tokens: no wrapper probe sees it
OWN_HEAD = (
    MHA,
    "class MultiHeadAttentionWrapper(nn.Module):",  # 3.5's class copied in, scaled by d_k
    solution_sources()[CAUSAL]
    .split("\n\n\nclass CausalAttention")[1]
    .join(["class Head", ""])
    .replace("keys.shape[-1]**0.5", "keys.shape[-1]")
    + "\n\nclass MultiHeadAttentionWrapper(nn.Module):",
)
OWN_HEAD_USED = (
    MHA,
    "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
    "[Head(d_in, d_out, context_length, dropout, qkv_bias)",
)  # CausalAttention imported, unused
CONCAT_DIM_1 = (MHA, "for head in self.heads], dim=-1)", "for head in self.heads], dim=1)")
CONCAT_DIM_3 = (MHA, "for head in self.heads], dim=-1)", "for head in self.heads], dim=3)")  # raises in 3.6
OWN_MISTAKES = {
    "own-heads-scaled-by-d-k": [NO_SCALING, OWN_HEAD, OWN_HEAD_USED],
    "concat-wrong-dim-a-variant-names": [BOOK_MASK, CONCAT_DIM_1],
    "concat-raises-in-the-wrapper": [NO_SCALING, CONCAT_DIM_3],
}


def test_a_wrapper_failing_for_a_reason_of_its_own_is_traced_as_before(tmp_path):
    """Not skipped: a wrapper that does not use CausalAttention, outputs that a variant of its own
    explains, an exception of its own. Its test is shown exactly what its own trace says."""
    folders = {}
    for name, edits in OWN_MISTAKES.items():
        sources = solution_sources()
        for module, old, new in edits:
            assert old in sources[module], (name, old)
            sources[module] = sources[module].replace(old, new)
        folder = tmp_path / name
        folder.mkdir()
        for module, text in sources.items():
            (folder / f"{module}.py").write_text(text)
        folders[folder] = name
    compared = []

    def check(diagnoser, folder, seam, outcomes, uses):
        sources = read_sources(folder)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses, sources)
        wrapper = next(o for o in outcomes if o.id == WRAPPER)
        assert not diagnoser.departs_where_it_relies(wrapper, outcomes, seam, uses, sources), folders[folder]
        everything = trace_probes(folder, sorted({p for o in outcomes if o.status != "passed" for p in o.probes}))
        planned = _shown(diagnoser, outcomes, seam, uses, sources, {name: everything[name] for name in traced}, shared)
        alone = _shown(diagnoser, outcomes, seam, uses, sources, everything, {})

        def view(shown):
            return [(o.misconception, o.diagnosis, o.blocked_by) for o in shown if o.id == WRAPPER]

        compared.append((folders[folder], view(planned), view(alone)))

    grade_each(list(folders), check)
    assert sorted(name for name, _, _ in compared) == sorted(OWN_MISTAKES)
    for name, planned, alone in compared:
        assert planned == alone, name
    own = {name: alone[0] for name, _, alone in compared}
    assert own["own-heads-scaled-by-d-k"][1].location.file == f"{MHA}.py"
    assert own["concat-wrong-dim-a-variant-names"][0] == "concat-wrong-dim"
    raised = own["concat-raises-in-the-wrapper"][1]  # the exception shows its own line; no cause of 3.5's
    assert raised is None or raised.location is None or raised.location.file == f"{MHA}.py"
