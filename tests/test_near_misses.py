"""Did-you-mean for the keyword arguments of the contract's constructors and builders (issue 24,
point 3): a parameter one or two edits from the one the contract passes is named, with both names,
its owner and the line of its definition; a correct signature, or one taking **kwargs, is not."""

from __future__ import annotations

import ast
import re
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from grader.intake.contract import CONSTRUCTOR, PARAMETERS
from grader.intake.discovery import discover, read_candidate
from grader.intake.near_misses import near_misses
from grader.records import MODULES, NearMiss
from tests.conftest import ROOT

REFERENCE = {m: (ROOT / "solutions" / f"{m}.py").read_text(encoding="utf-8") for m in MODULES}
MISSPELT = {  # owner -> (the contract's keyword, as a student misspells it)
    "SelfAttention_v1": ("d_out", "d_ou"),
    "SelfAttention_v2": ("qkv_bias", "qvk_bias"),
    "CausalAttention": ("context_length", "context_lenght"),
    "MultiHeadAttentionWrapper": ("dropout", "droput"),
    "MultiHeadAttention": ("num_heads", "num_head"),
    "build_two_dim_wrapper": ("context_length", "contextlength"),
    "build_gpt2_small_attention": ("dropout", "Dropout"),
}


def signature(module: str, owner: str) -> ast.FunctionDef:
    """The reference's constructor of class OWNER, or function OWNER."""
    for node in ast.parse(REFERENCE[module]).body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            return next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == CONSTRUCTOR)
        if isinstance(node, ast.FunctionDef) and node.name == owner:
            return node
    raise LookupError(owner)


def owner_module(owner: str) -> str:
    return next(m for m in MODULES if re.search(rf"^(class|def) {owner}\b", REFERENCE[m], re.M))


def test_every_constructor_and_builder_of_the_contract_is_covered():
    assert set(MISSPELT) == set(PARAMETERS)


@pytest.mark.parametrize("owner", MISSPELT)
def test_a_misspelt_keyword_is_named_with_both_names_its_owner_and_line(owner):
    wanted, misspelt = MISSPELT[owner]
    module = owner_module(owner)
    definition = signature(module, owner)
    [argument] = [a for a in definition.args.args + definition.args.kwonlyargs if a.arg == wanted]
    lines = REFERENCE[module].split("\n")
    line = lines[argument.lineno - 1]
    lines[argument.lineno - 1] = line[: argument.col_offset] + misspelt + line[argument.col_offset + len(wanted) :]
    found = near_misses({module: "\n".join(lines)}, {})
    assert NearMiss(module, "keyword", wanted, misspelt, f"{module}.py", argument.lineno, 0, owner) in found
    assert near_misses({module: REFERENCE[module]}, {}) == ()


def test_a_signature_taking_any_keyword_is_no_near_miss():
    source = "class CausalAttention:\n    def __init__(self, d_in, d_out, context_len, **rest):\n        pass\n"
    assert [m for m in near_misses({"sec3_5_causal_attention": source}, {}) if m.kind == "keyword"] == []


def test_a_first_look_reads_what_the_grading_read_does_but_the_misspelt_names(tmp_path):
    """The plan's first look at a submission (`near_misses=False`) skips parsing its code for
    misspelt names: it is the grading read's submission without them, whichever way the student
    handed it in (a folder, a zip in a folder, files of an LMS download, unzipped or not)."""
    wanted, misspelt = MISSPELT["MultiHeadAttention"]
    module = owner_module("MultiHeadAttention")
    sources = {
        name: source.replace(wanted, misspelt) if name == module else source for name, source in REFERENCE.items()
    }
    klass = tmp_path / "class"
    for name, source in sources.items():
        (klass / "plain").mkdir(parents=True, exist_ok=True)
        (klass / "plain" / f"{name}.py").write_text(source)
    (klass / "zipped").mkdir()
    with zipfile.ZipFile(klass / "zipped" / "ch3.zip", "w") as upload:
        for name, source in sources.items():
            upload.writestr(f"ch3/{name}.py", source)
    canvas = shutil.copytree(ROOT / "examples" / "lms" / "canvas-download", tmp_path / "canvas")
    (canvas / f"leecarol_5103_70114_{module}.py").write_text(sources[module])
    downloaded = Path(shutil.make_archive(str(tmp_path / "canvas"), "zip", canvas))  # the LMS's zip, as downloaded
    candidates = [*discover(klass).candidates, *discover(canvas).candidates, *discover(downloaded).candidates]
    misspelt_ones = 0
    for candidate in candidates:
        whole = read_candidate(candidate)
        first_look = read_candidate(candidate, near_misses=False)
        assert first_look == replace(whole, intake=replace(whole.intake, near_misses=())), candidate.name
        misspelt_ones += any(miss.found == misspelt for miss in whole.intake.near_misses)
    assert misspelt_ones == 4  # plain, zipped, and the LMS download's student, in its folder and its zip
