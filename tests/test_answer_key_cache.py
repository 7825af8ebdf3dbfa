"""The answer key's outputs are computed once per kit version and cached where every run finds them
(grader/answer_key.py): the first cache folder that holds them is read, the first that can take
them is written, only the grader's user can read them, and the key changes with the kit's code."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
import torch

from grader import answer_key
from grader.answer_key import KIT_CACHE, AnswerKey, bake
from grader.fingerprint import code_fingerprint, tree_digest
from grader.probes import load_all
from grader.records import ProbeError


@pytest.fixture(scope="module")
def baked(tmp_path_factory) -> Path:
    """A kit's cache folder holding the answer key (a copy of this kit's own, made once)."""
    folder = tmp_path_factory.mktemp("kit") / ".cache"
    folder.mkdir(mode=0o700)
    for file in bake():
        shutil.copy2(file, folder / file.name)
    return folder


def _never(*args, **kwargs):
    raise AssertionError("computed again although a cache holds it")


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_the_first_folder_that_holds_the_answer_key_is_read(baked, tmp_path, monkeypatch):
    kits = AnswerKey([KIT_CACHE], code_fingerprint())
    monkeypatch.setattr(answer_key, "reference_results", _never)
    monkeypatch.setattr(answer_key, "variant_runs", _never)
    key = AnswerKey([tmp_path / "empty", baked], code_fingerprint())
    reference, expected = key.reference().results, kits.reference().results
    assert reference.keys() == expected.keys() and len(reference) == len(load_all())
    assert all(_same(reference[name], expected[name]) for name in expected)
    assert not any(isinstance(r, ProbeError) for r in reference.values())
    assert [run.variant for run in key.variants] == [run.variant for run in kits.variants]
    assert not (tmp_path / "empty").exists()  # a folder read from is never written to


def test_a_cache_of_another_kit_is_not_read(baked, tmp_path, monkeypatch):
    other = tmp_path / ".cache"
    other.mkdir(mode=0o700)
    for file in baked.iterdir():  # this kit's outputs, filed under another kit's fingerprint
        shutil.copy2(file, other / file.name.replace(code_fingerprint(), "0" * 16))
    computed = []
    monkeypatch.setattr(answer_key, "reference_results", lambda: computed.append(1) or _never())
    with pytest.raises(AssertionError, match="computed again"):
        AnswerKey([other], code_fingerprint()).reference()
    assert computed


def test_the_first_folder_that_can_take_it_is_written_for_the_grader_alone(baked, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # nothing can be made inside it
    fallback = tmp_path / "out" / ".grader-cache"
    fingerprint = code_fingerprint()
    (cached,) = baked.glob(f"answer-key-{fingerprint}.bin")
    key = AnswerKey([blocked / ".cache", fallback], fingerprint)
    key._store(cached.name, {"reference": {}, "variants": []}, "answer-key-[!m]*.bin")
    written = fallback / cached.name
    assert written.is_file()
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_a_kit_of_other_code_has_another_key_but_its_caches_do_not_count(tmp_path):
    kit = tmp_path / "grader"
    (kit / "probes").mkdir(parents=True)
    (kit / "probes" / "a.py").write_text("A = 1\n")
    before = tree_digest.__wrapped__(kit)
    (kit / ".cache").mkdir()
    (kit / ".cache" / "answer-key-0.bin").write_bytes(b"cached")
    (kit / "probes" / "__pycache__").mkdir()
    (kit / "probes" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert tree_digest.__wrapped__(kit) == before
    (kit / "probes" / "a.py").write_text("A = 2\n")
    assert tree_digest.__wrapped__(kit) != before
