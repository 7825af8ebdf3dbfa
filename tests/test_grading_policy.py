"""A mistake costs points once (docs/grading-policy.md): a later module that imports a broken earlier
one still imports, with stand-ins for what it takes from it (grader.sandbox.stand_ins); a later
check that uses an earlier class that imports but is wrong is judged against what the student's own
class gives. Graded as instructors grade (the sandbox), on both tracks, and on every generated
single mutant of 3.5 (in this process: these are our own files)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from grader import stand_ins
from grader.sandbox import driver
from tests.conftest import mindspore_solutions_as_submission, solutions_as_submission

CAUSAL, MHA = "sec3_5_causal_attention", "sec3_6_multi_head_attention"
LATER = (MHA, "exercise3_2_two_dim_output", "exercise3_3_gpt2_attention")
USES_CAUSAL = ("sec3_6_multi_head_attention::test_wrapper", "exercise3_2_two_dim_output::")
# (module, the reference's text, the student's), per track
EDITS = {
    "pytorch": {
        "syntax-error-in-3.5": (CAUSAL, "    def forward(self, x):", "    def forward(self, x)"),
        "mask-not-applied": (CAUSAL, "attn_scores.masked_fill_(self.mask", "attn_scores.masked_fill(self.mask"),
        "zeros-mha": (
            MHA,
            "        b, num_tokens, d_in = x.shape  # (b, T, d_in)\n\n        keys",
            "        return torch.zeros(x.shape[0], x.shape[1], self.d_out)\n\n        keys",
        ),
    },
    "mindspore": {
        "syntax-error-in-3.5": (CAUSAL, "    def construct(self, x):", "    def construct(self, x)"),
        "mask-not-applied": (
            CAUSAL,
            "attn_scores = attn_scores.masked_fill(self.mask",
            "attn_scores.masked_fill(self.mask",
        ),
        "zeros-mha": (
            MHA,
            "        b, num_tokens, d_in = x.shape  # (b, T, d_in)\n\n        keys",
            "        return ops.zeros((x.shape[0], x.shape[1], self.d_out))\n\n        keys",
        ),
    },
}


def _submission(folder: Path, track: str, edit: tuple[str, str, str]) -> None:
    (mindspore_solutions_as_submission if track == "mindspore" else solutions_as_submission)(folder)
    module, old, new = edit
    path = folder / f"{module}.py"
    text = path.read_text()
    assert text.count(old) == 1, (track, old)
    path.write_text(text.replace(old, new))


def _graded(tmp_path_factory, track: str) -> dict:
    from grader.run import grade

    base = tmp_path_factory.mktemp(f"policy-{track}")
    for name, edit in EDITS[track].items():
        _submission(base / "class" / name, track, edit)
    summary = grade(base / "class", base / "reports", force=True)
    return {result.submission: result for result in summary.results}


@pytest.fixture(scope="module", params=["pytorch", "mindspore"])
def graded(request, tmp_path_factory):
    if request.param == "mindspore":
        pytest.importorskip("mindspore")
    return _graded(tmp_path_factory, request.param)


def _lost(result) -> dict[str, object]:
    return {t.id: t for t in result.tests if t.points < t.max_points}


def test_a_syntax_error_in_3_5_costs_3_5_and_what_uses_causal_attention_only(graded):
    """sec3_6 imports CausalAttention at its top: MultiHeadAttention and Exercise 3.3 earn their
    points; the checks that use CausalAttention say which name they need and 3.5's line."""
    lost = _lost(graded["syntax-error-in-3.5"])
    later = {test: outcome for test, outcome in lost.items() if not test.startswith(CAUSAL)}
    assert later and all(test.startswith(USES_CAUSAL) for test in later), sorted(later)
    for outcome in later.values():
        assert outcome.blocked_by == CAUSAL
        assert outcome.error.key == "import.stand-in-located" and outcome.error.params["name"] == "CausalAttention"
        assert outcome.error.location.file == f"{CAUSAL}.py"
        assert outcome.error.location.code.startswith(("def forward(self, x)", "def construct(self, x)"))
        assert "`CausalAttention` from sec3_5_causal_attention" in outcome.message, outcome.message


def test_a_mask_never_applied_costs_3_5_only(graded):
    """The wrapper puts side by side what the student's own heads give; Exercise 3.2's output is
    judged with those heads."""
    lost = _lost(graded["mask-not-applied"])
    assert lost and all(test.startswith(CAUSAL) for test in lost), sorted(lost)


def test_a_zeros_multi_head_attention_costs_3_6_only(graded):
    """Exercise 3.3 is about building GPT-2 small's attention, not about its forward again."""
    lost = _lost(graded["zeros-mha"])
    assert lost and all(test.startswith(f"{MHA}::test_mha") for test in lost), sorted(lost)


# -- every single mutant of 3.5 (in this process) ---------------------------------------------------


@pytest.fixture(scope="module")
def mutants_graded(tmp_path_factory):
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "benchmarks")]
    from in_process import grade_each
    from mutation import single_mutants
    from mutation_source import solution_sources

    original = solution_sources()
    folders = {}
    for index, mutant in enumerate(m for m in single_mutants() if m.module == CAUSAL):
        folder = tmp_path_factory.mktemp(f"mutant{index:03d}")
        for module, source in original.items():
            (folder / f"{module}.py").write_text(mutant.source if module == mutant.module else source)
        folders[folder] = mutant
    found = []

    def check(diagnoser, folder, outputs, outcomes, uses):
        found.append((folders[folder], outputs, outcomes))

    grade_each(list(folders), check)
    return found


def test_a_mistake_in_3_5_that_still_runs_costs_no_later_points(mutants_graded):
    """Every mutant of the reference 3.5 whose CausalAttention still runs on the wrapper's heads
    (builds, takes known weights by the contract's names, returns a tensor of the right size): the wrapper, Exercise
    3.2 and 3.3 score what they score on the reference. (Where it raises, the later checks that use
    it cannot be judged, and say so.)"""
    running = 0
    for mutant, outputs, outcomes in mutants_graded:
        own = outputs.outputs(f"{MHA}:wrapper_own_heads")
        if own is None or any(head.shape[-1] != 3 for head in own["main"]):
            continue  # raises, or heads of another size: the later checks of shapes judge by the reference
        running += 1
        lost = [o.id for o in outcomes if o.module in LATER and o.status != "passed"]
        assert not lost, (mutant.detail, lost)
    assert running >= 80  # 93 of 127 when written


# -- the stand-ins themselves ----------------------------------------------------------------------


def _namespace(folder: Path, files: dict[str, str]) -> driver.StudentNamespace:
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    for name in (CAUSAL, MHA):
        sys.modules.pop(name, None)
    return driver.StudentNamespace(str(folder))


@pytest.fixture
def clean_imports():
    path, meta_path = list(sys.path), list(sys.meta_path)
    yield
    sys.path[:], sys.meta_path[:] = path, meta_path
    for name in (CAUSAL, MHA):
        sys.modules.pop(name, None)


LATER_MODULE = """
from sec3_5_causal_attention import CausalAttention, simple_causal_mask
import sec3_5_causal_attention as causal


class MyHead(CausalAttention):  # a subclass at module level must not stop the import
    pass


def unrelated():
    return 42


def uses_it():
    return MyHead(3, 2, 6, 0.0)


def uses_the_module():
    return causal.masked_attention_weights(None, 2)
"""


def test_a_later_module_imports_and_fails_only_where_it_uses_a_broken_name(tmp_path, clean_imports):
    ns = _namespace(tmp_path, {CAUSAL: "import torch\n\ndef simple_causal_mask(n)\n    pass\n", MHA: LATER_MODULE})
    later = ns.module(MHA)
    assert later.unrelated() == 42
    for use in (later.uses_it, later.uses_the_module, lambda: later.simple_causal_mask(4)):
        with pytest.raises(stand_ins.EarlierModuleBroken) as raised:
            use()
        record = driver.describe_error(raised.value, str(tmp_path))
        assert record["key"] == "import.stand-in-located" and record["module"] == CAUSAL
        assert record["exc_type"] == "SyntaxError" and record["frames"][-1]["line"] == 3
    with pytest.raises(driver.ImportFailed):  # 3.5's own checks still see its failure
        ns.module(CAUSAL)


def test_a_missing_earlier_module_and_a_use_at_import_time(tmp_path, clean_imports):
    ns = _namespace(
        tmp_path, {MHA: "from sec3_5_causal_attention import CausalAttention\n\nHEAD = CausalAttention()\n"}
    )
    with pytest.raises(driver.ImportFailed) as raised:  # used while importing: the later module fails
        ns.module(MHA)
    record = driver.describe_error(raised.value, str(tmp_path))
    assert record["key"] == "import.stand-in-missing" and record["module"] == CAUSAL
    assert record["params"] == {"module": CAUSAL, "name": "CausalAttention"}


def test_an_earlier_module_raising_at_import_is_named_with_its_line(tmp_path, clean_imports):
    broken = "x = 1\nraise ValueError('no')\n"
    ns = _namespace(tmp_path, {CAUSAL: broken, MHA: LATER_MODULE})
    with pytest.raises(stand_ins.EarlierModuleBroken) as raised:
        ns.module(MHA).uses_it()
    record = driver.describe_error(raised.value, str(tmp_path))
    assert record["key"] == "import.stand-in-located" and record["exc_type"] == "ValueError"
    assert record["frames"][-1]["file"] == f"{CAUSAL}.py" and record["frames"][-1]["line"] == 2
    assert re.search("no", record["message"])


def test_a_new_namespace_is_not_answered_by_an_earlier_ones_stand_ins(tmp_path, clean_imports):
    """A parked child imports the submission afresh for its next command (a new namespace): the
    earlier namespace's record of a broken module must not turn the new one's own import of it into
    a stand-in."""
    broken = {CAUSAL: "def simple_causal_mask(n)\n    pass\n", MHA: LATER_MODULE}
    first = _namespace(tmp_path, broken)
    with pytest.raises(driver.ImportFailed):
        first.module(CAUSAL)
    second = _namespace(tmp_path, broken)
    with pytest.raises(driver.ImportFailed):
        second.module(CAUSAL)
    assert sum(isinstance(f, stand_ins.StandInFinder) for f in sys.meta_path) == 1
