"""The answer key's outputs: what the reference solutions and their known-buggy variants give on
every probe, per track, computed once per kit version and cached. The one place they are made.

Both tracks are compared with the PyTorch reference's outputs, except on the probes of the book's
seeded runs (`grader.frameworks.SEEDED_PROBES`): a MindSpore submission's seeded outputs come from
MindSpore's random stream and are compared with the MindSpore reference's (`solutions.mindspore`,
the CPU values of exercise-api.md §4). MindSpore is imported only when a run has MindSpore
submissions.

The cache holds the answer key, so only the grader's own user may read it: its folder is 0700 and
each file 0600, written through a temporary file and a rename (a link at its path is replaced,
never followed). Files are read back with the sandbox's pickle-free codec.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grader.diagnosis.variants import VariantRun, all_variants
from grader.frameworks import MINDSPORE, PYTORCH, SEEDED_PROBES, namespace_for
from grader.probe_outputs import ProbeOutputs, ProbeResults
from grader.probes import PROBES, load_all
from grader.records import ProbeError
from grader.reference_code import ModuleNamespace, run_in_process
from grader.sandbox import codec
from grader.sandbox.boundary import result_from_record


class AnswerKeyBroken(RuntimeError):
    """The reference fails one of its own probes: a bug in the kit, never a student's."""


def reference_results() -> ProbeResults:
    """The PyTorch reference's outputs on every probe."""
    return _unbroken(run_in_process(ModuleNamespace("solutions")), "the reference solutions")


def variant_runs() -> list[VariantRun]:
    """Every variant's outputs on the probes of the modules it changes."""
    load_all()
    runs = []
    for variant in all_variants():
        probes = sorted(name for name, probe in PROBES.items() if probe.module in variant.modules)
        runs.append(VariantRun(variant, run_in_process(ModuleNamespace("solutions", variant.overrides), probes=probes)))
    return runs


def mindspore_seeded_results() -> ProbeResults:
    """The MindSpore reference's outputs on the seeded probes."""
    ns = namespace_for(MINDSPORE, ModuleNamespace("solutions.mindspore"))
    return _unbroken(run_in_process(ns, probes=sorted(SEEDED_PROBES)), "the MindSpore reference")


def _unbroken(results: ProbeResults, what: str) -> ProbeResults:
    broken = {name: r for name, r in results.items() if isinstance(r, ProbeError)}
    if broken:
        raise AnswerKeyBroken(f"{what} fail probes: {broken}")
    return results


class AnswerKey:
    """The reference's outputs per track and the variants' outputs, made (or read from `cache_dir`,
    per kit `fingerprint`) on first use."""

    def __init__(self, cache_dir: Path | None = None, fingerprint: str = ""):
        self.cache_dir = cache_dir if fingerprint else None
        self.fingerprint = fingerprint
        self._references: dict[str, ProbeOutputs] = {}
        self._variants: list[VariantRun] | None = None

    @property
    def variants(self) -> list[VariantRun]:
        if self._variants is None:
            self._load_pytorch()
        assert self._variants is not None
        return self._variants

    def reference(self, track: str = PYTORCH) -> ProbeOutputs:
        if track not in self._references:
            if track == PYTORCH:
                self._load_pytorch()
            elif track == MINDSPORE:
                results = dict(self.reference(PYTORCH).results)
                results.update(self._mindspore_seeded())
                self._references[track] = ProbeOutputs(results)
            else:
                raise ValueError(f"unknown track {track!r}")
        return self._references[track]

    def _load_pytorch(self) -> None:
        variants = all_variants()
        cache = self._cache_file(f"answer-key-{self.fingerprint}.bin")
        document = _read(cache)
        try:
            reference = {name: result_from_record(r) for name, r in document["reference"].items()}
            runs = [
                VariantRun(variant, {name: result_from_record(r) for name, r in results.items()})
                for variant, results in zip(variants, document["variants"], strict=True)
            ]
        except (KeyError, TypeError, ValueError, AttributeError):
            reference, runs = reference_results(), variant_runs()
            _write(
                cache,
                {
                    "reference": {name: _record(r) for name, r in reference.items()},
                    "variants": [{name: _record(r) for name, r in run.results.items()} for run in runs],
                },
                "answer-key-[!m]*.bin",
            )  # not the MindSpore track's
        self._references[PYTORCH] = ProbeOutputs(reference)
        self._variants = runs

    def _mindspore_seeded(self) -> ProbeResults:
        version = _version("mindspore")  # importable without metadata: nothing is cached
        cache = self._cache_file(f"answer-key-mindspore-{version}-{self.fingerprint}.bin") if version else None
        document = _read(cache)
        try:
            return {name: result_from_record(record) for name, record in document.items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            results = mindspore_seeded_results()
            _write(cache, {name: {"ok": r} for name, r in results.items()}, "answer-key-mindspore-*.bin")
            return results

    def _cache_file(self, name: str) -> Path | None:
        return self.cache_dir / name if self.cache_dir is not None else None


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _record(result: Any) -> dict:
    """A probe's result as the codec stores it (as the sandbox sends it)."""
    if isinstance(result, ProbeError):
        error = asdict(result)
        error["frames"] = [asdict(frame) for frame in result.frames]
        error["params"] = {k: v if type(v) in (bool, int, float, str) else str(v) for k, v in result.params.items()}
        return {"error": error}
    return {"ok": result}


def _read(path: Path | None) -> Any:
    """The cached document at PATH, or None when there is none (or it cannot be read)."""
    if path is None:
        return None
    try:
        # for no other user to read (student code, where neither bubblewrap nor a mount namespace
        # hides the reports), also when an earlier version of the kit made the folder
        if path.parent.is_dir():
            os.chmod(path.parent, 0o700)
        return codec.decode(path.read_bytes())
    except (OSError, codec.CodecError, KeyError, TypeError, ValueError, AttributeError):
        return None


def _write(path: Path | None, document: Any, stale: str) -> None:
    """Store DOCUMENT at PATH and remove the folder's other files matching the glob STALE (older kit
    versions). Best effort: a cache that cannot be written is computed again next time."""
    if path is None:
        return
    try:
        data = codec.encode(document)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
        for old in path.parent.glob(stale):
            if old != path:
                old.unlink(missing_ok=True)  # only the current kit's answer key is kept
    except (OSError, codec.CodecError):
        pass
