"""Shared traces and the student's own control flow (Diagnoser.trace_plan, grader.diagnosis.shared_paths).

One known-buggy variant explains several tests whose probes run the same reference functions, but
the student's code takes other lines for other inputs: the same mistake written twice, picked by
dtype, by `self.training`, by the batch size, by qkv_bias, by a table of helpers. Sharing one trace
then told a borrowing test the line of another input's path. Each submission here is generated
from the reference solutions; each test must get the diagnosis its own trace gives. Student code
runs in this process: it is our own test data.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from in_process import grade_each, read_sources, trace_probes
from mutation_source import solution_sources

from grader.diagnosis import Diagnoser
from grader.diagnosis.blame import attribute_to_earlier_sections
from grader.diagnosis.shared_paths import same_lines_for_every_input, uses_modules

MHA, CAUSAL = "sec3_6_multi_head_attention", "sec3_5_causal_attention"
MHA_SOFTMAX = (
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)  "
    "# (b, num_heads, T, T)  [checkpoint: div=scaled, softmax=weights]\n"
)
CAUSAL_SOFTMAX = (
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)  "
    "# (b, T, T)  [checkpoint: div=scaled, softmax=weights]\n"
)
MHA_MASK = "        attn_scores.masked_fill_(mask_bool, -torch.inf)  # [checkpoint: masked]\n"

# name -> (module, the reference's line, the student's lines): one mistake, other lines for other inputs
BRANCHES = {
    "scaling-missing-by-dtype": (
        MHA,
        MHA_SOFTMAX,
        """\
        if x.dtype == torch.float64:
            attn_weights = torch.softmax(attn_scores, dim=-1)
        else:
            attn_weights = torch.softmax(attn_scores, dim=-1)
""",
    ),
    "scaling-missing-by-training": (
        CAUSAL,
        CAUSAL_SOFTMAX,
        """\
        if self.training:
            attn_weights = torch.softmax(attn_scores, dim=-1)
        else:
            attn_weights = torch.softmax(attn_scores, dim=-1)
""",
    ),
    "scaling-wrong-by-bias": (
        MHA,
        MHA_SOFTMAX,
        """\
        if self.W_query.bias is not None:
            attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)
        else:
            attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)
""",
    ),
    "mask-inverted-two-forms-by-batch": (
        MHA,
        MHA_MASK,
        """\
        attn_scores = attn_scores.masked_fill(~mask_bool, -torch.inf) if b > 3 else \\
            torch.where(mask_bool, attn_scores, torch.full_like(attn_scores, -torch.inf))
""",
    ),
    "scaling-missing-in-a-helper-table": (
        MHA,
        MHA_SOFTMAX,
        """\
        attn_weights = {torch.float32: plain_softmax, torch.float64: exp_softmax}[x.dtype](attn_scores)
""",
    ),
}
HELPERS = """

def plain_softmax(scores):
    return torch.softmax(scores, dim=-1)


def exp_softmax(scores):
    weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return weights / weights.sum(dim=-1, keepdim=True)
"""


def _submission(name: str, tmp_path: Path) -> Path:
    module, line, student = BRANCHES[name]
    sources = solution_sources()
    assert line in sources[module]
    text = sources[module].replace(line, student) + (HELPERS if "helper" in name else "")
    folder = tmp_path / name
    folder.mkdir()
    for other, source in sources.items():
        (folder / f"{other}.py").write_text(text if other == module else source)
    return folder


def _diagnosed(diagnoser, outcomes, seam, uses, sources, documents, shared) -> dict[str, tuple]:
    fresh = [replace(outcome, misconception=None, diagnosis=None) for outcome in outcomes]
    fresh = diagnoser.diagnose_submission(fresh, seam, uses, sources, documents, shared)
    fresh = attribute_to_earlier_sections(fresh, uses)  # as the report shows it
    return {o.id: (o.misconception, o.diagnosis, o.blocked_by) for o in fresh if o.status != "passed"}


def test_a_test_whose_student_code_takes_other_lines_gets_its_own_trace(tmp_path):
    folders = [_submission(name, tmp_path) for name in BRANCHES]
    differ, located, checked = [], 0, []

    def check(diagnoser, folder, seam, outcomes, uses):
        nonlocal located
        sources = read_sources(folder)
        traced, shared = diagnoser.trace_plan(outcomes, seam, uses, sources)
        documents = trace_probes(folder, sorted({p for o in outcomes if o.status != "passed" for p in o.probes}))
        planned = _diagnosed(
            diagnoser,
            outcomes,
            seam,
            uses,
            sources,
            {name: documents[name] for name in traced if name in documents},
            shared,
        )
        alone = _diagnosed(diagnoser, outcomes, seam, uses, sources, documents, {})
        differ.extend(
            f"{folder.name} {test}: {planned.get(test)} != {alone[test]}"
            for test in alone
            if planned.get(test) != alone[test]
        )
        lines = {d.location.line for _, d, _ in alone.values() if d is not None and d.location is not None}
        located += len(lines) > 1  # the tests' own traces name several lines: sharing one would lose some
        checked.append(folder.name)

    grade_each(folders, check)
    assert not differ
    assert sorted(checked) == sorted(BRANCHES)
    assert located >= 4  # the check above compared submissions whose paths really differ


def _branch_free_mistake(tmp_path: Path) -> Path:
    """The reference with MultiHeadAttention's softmax over the wrong axis, written once, no branches."""
    folder = tmp_path / "plain"
    folder.mkdir()
    for module, text in solution_sources().items():
        (folder / f"{module}.py").write_text(
            text.replace(MHA_SOFTMAX, "        attn_weights = torch.softmax(attn_scores, dim=-1)\n")
        )
    return folder


def test_branch_free_code_still_shares_one_trace(tmp_path):
    """The same mistake written once, with no choice of lines: one trace for the tests it explains."""
    folder = _branch_free_mistake(tmp_path)
    plans = []

    def check(diagnoser, folder, seam, outcomes, uses):
        code = read_sources(folder)
        untraced = Diagnoser(diagnoser.reference, diagnoser.runs, traced=False)  # the MindSpore track's
        plans.append(
            (
                diagnoser.trace_plan(outcomes, seam, uses, code),
                diagnoser.trace_plan(outcomes, seam, uses),
                untraced.trace_plan(outcomes, seam, uses, code),
            )
        )

    grade_each([folder], check)
    (_, shared), (_, without_sources), untraced = plans[0]
    assert len(shared) >= 2
    assert without_sources == {}  # no sources, no proof the lines are the same: nothing shared
    assert untraced == ([], {})  # a track the tracer cannot see neither traces nor shares


def test_a_missing_trace_of_the_traced_probe_costs_only_the_location(tmp_path):
    """The trace job timed out (or its document was truncated to nothing) for the probe a group
    shares: no crash, every test of the group keeps the variant's cause."""
    folder = _branch_free_mistake(tmp_path)
    results = []

    def check(diagnoser, folder, seam, outcomes, uses):
        code = read_sources(folder)
        _, shared = diagnoser.trace_plan(outcomes, seam, uses, code)
        for documents in ({}, {name: {"ops": "cut short"} for name in set(shared.values())}):
            results.append((shared, _diagnosed(diagnoser, outcomes, seam, uses, code, documents, shared)))

    grade_each([folder], check)
    for shared, diagnosed in results:
        assert shared
        borrowing = [test for test, (cause, _, _) in diagnosed.items() if test.startswith(MHA) and cause]
        assert len(borrowing) >= len(shared)
        assert all(diagnosed[test][0] == "missing-scaling" for test in borrowing)


@pytest.mark.parametrize(
    "body, same",
    [
        ("return torch.softmax(x, dim=-1)", True),
        ("if x.dim() != 3:\n        raise ValueError('3-d input')\n    return x", True),  # a guard only raises
        ("return [h(x) for h in self.heads]", True),
        ("return sum(x for _ in range(self.num_heads))", True),
        ("if self.training:\n        return x\n    return -x", False),
        ("return x if x.dtype == torch.float64 else -x", False),
        ("return x.dtype == torch.float64 and x", False),
        ("while x.sum() > 0:\n        x = x - 1\n    return x", False),
        ("try:\n        return f(x)\n    except RuntimeError:\n        return x", False),
        ("return [f(x) for f in (a, b) if f]", False),
        ("return (a, b)[x.dim() - 3](x)", False),
        ("return TABLE[x.dtype](x)", False),
        ("return getattr(torch, name)(x)", False),
        ("for _ in range(int(x.dtype == torch.float64)):\n        x = x / 1\n    return x", False),
        ("return globals()['helper'](x)", False),
    ],
)
def test_which_student_code_can_take_other_lines(body, same):
    source = f"import torch\n\n\ndef forward(self, x):\n    {body}\n"
    assert same_lines_for_every_input(["m.py"], {"m": source}) is same


def test_other_lines_in_an_imported_module_or_a_cached_helper_are_seen():
    clean = "import torch\n\n\ndef forward(x):\n    return helper(x)\n"
    for imports in (f"from .{CAUSAL} import helper\n", f"from {CAUSAL} import helper\n", f"import {CAUSAL}\n"):
        assert same_lines_for_every_input(["m.py"], {"m": imports + clean, CAUSAL: "def helper(x):\n    return x\n"})
        assert not same_lines_for_every_input(
            ["m.py"], {"m": imports + clean, CAUSAL: "def helper(x):\n    return x or 1\n"}
        )
    cached = "import functools\n\n\n@functools.lru_cache\ndef mask(t):\n    return t\n"
    assert not same_lines_for_every_input(["m.py"], {"m": cached})
    table = "def a(x):\n    return x\n\n\ndef b(x):\n    return -x\n\n\nTABLE = {1: a, 2: b}\n"
    assert not same_lines_for_every_input(["m.py"], {"m": table})
    assert not same_lines_for_every_input(["m.py"], {"m": "def broken(:\n"})
    assert same_lines_for_every_input(["m.py", None], {})  # not the submission's code: nothing to choose


IMPORT_STYLES = {  # how a module's name gets into the student's module: (import line, the name used)
    "from": ("from {m} import CausalAttention", "CausalAttention"),
    "from-relative": ("from .{m} import CausalAttention", "CausalAttention"),
    "from-as": ("from {m} import CausalAttention as Head", "Head"),
    "import": ("import {m}", "{m}.CausalAttention"),
    "import-as": ("import {m} as earlier", "earlier.CausalAttention"),
}


@settings(max_examples=200, deadline=None)
@given(
    style=st.sampled_from(sorted(IMPORT_STYLES)),
    used=st.booleans(),
    where=st.sampled_from(["init", "forward", "module", "default"]),
    through=st.booleans(),
)
def test_a_module_counts_as_used_only_where_a_name_of_it_is_used(style, used, where, through):
    """`uses_modules`: an import alone is no use; a name of the module used anywhere in the code
    (a constructor, a forward, module level, a default argument) is, directly or through another
    of the submission's modules that is used in turn."""
    line, name = IMPORT_STYLES[style]
    name = name.format(m=CAUSAL)
    uses = {
        "init": f"    def __init__(self):\n        self.head = {name}(2, 2, 4, 0.0)\n",
        "forward": f"    def forward(self, x):\n        return {name}(2, 2, 4, 0.0)(x)\n",
        "default": f"    def build(self, kind={name}):\n        return kind\n",
        "module": f"    pass\n\n\nHEAD = {name}\n",
    }
    body = "class Wrapper:\n" + (uses[where] if used else "    def __init__(self):\n        self.other = 1\n")
    user = line.format(m=CAUSAL) + "\n\n" + body
    sources, start = {CAUSAL: "class CausalAttention:\n    pass\n", MHA: user}, MHA
    if through:  # Exercise 3.2 reaches 3.5 through 3.6's wrapper
        sources["exercise3_2_two_dim_output"] = f"from {MHA} import Wrapper\n\n\ndef build():\n    return Wrapper()\n"
        start = "exercise3_2_two_dim_output"
    assert uses_modules(start, [CAUSAL], sources) is used
    assert uses_modules(start, [], sources)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_read_without_an_error(text):
    """A module that does not parse uses nothing (so no trace is skipped for it)."""
    assert uses_modules(MHA, [CAUSAL], {MHA: text, CAUSAL: "x = 1\n"}) in (True, False)
    assert not uses_modules(MHA, [CAUSAL], {MHA: f"from {CAUSAL} import x\n" + "(" * 300 + "\n"})
