"""The 3.3 suite against known submissions, and the misconception catalogue as a whole."""

from __future__ import annotations

import shutil

import pytest

from grader.diagnosis.catalogue.misconceptions import CATALOGUE
from grader.i18n import Catalog
from grader.run import grade
from tests.buggy import all_buggy, buggy
from tests.conftest import ROOT

S3 = "sec3_3_simple_attention::"
BUGGY = {
    "uses-scores-not-weights-3_3": {
        S3 + "test_context_vector_for_query": "uses-scores-not-weights",
        S3 + "test_context_vectors": "uses-scores-not-weights",
    },
    # (softmax over dim 0 of one query's 1-D scores is right, so that test passes)
    "softmax-wrong-dim-3_3": {
        S3 + "test_attention_weights": "softmax-wrong-dim",
        S3 + "test_attention_weights_rows_sum_to_one": "softmax-wrong-dim",
        S3 + "test_context_vectors": "softmax-wrong-dim",
    },
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("sec3_3")
    klass = base / "class"
    for name in BUGGY:
        buggy(name).write(klass / name)
    shutil.copytree(ROOT / "tests" / "submissions" / "correct" / "einsum-3_3", klass / "einsum-3_3")
    summary = grade(klass, base / "reports", jobs=2, force=True)
    return {r.submission: r for r in summary.results}


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_3_3_submission_is_named_exactly_where_the_mistake_shows(graded, name):
    got = {t.id: t.misconception for t in graded[name].tests if t.section == "3.3" and t.status != "passed"}
    assert got == BUGGY[name]


def test_a_correct_3_3_written_differently_earns_full_marks_without_diagnosis(graded):
    tests = [t for t in graded["einsum-3_3"].tests if t.section == "3.3"]
    assert tests and all(t.status == "passed" and t.misconception is None for t in tests)


def test_every_catalogue_entry_has_a_buggy_submission():
    named = {b.misconception for b in all_buggy()}
    missing = [i for i in CATALOGUE if i not in named]
    assert missing == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_catalogue_entry_is_explained_with_a_hint(lang):
    catalog = Catalog(lang)
    for misconception in CATALOGUE:
        for field in ("title", "explanation", "hint"):
            key = f"misconceptions.{misconception}.{field}"
            assert catalog.t(key) != key, key
