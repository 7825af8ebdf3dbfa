"""The answer key's outputs: what the reference solutions and their known-buggy variants give on
every probe, per track, computed once per kit version and cached. The one place they are made.

Both tracks are compared with the PyTorch reference's outputs, except on the probes of the book's
seeded runs (`grader.frameworks.SEEDED_PROBES`): a MindSpore submission's seeded outputs come from
MindSpore's random stream and are compared with the MindSpore reference's (`solutions.mindspore`,
the CPU values of exercise-api.md §4). MindSpore is imported only when a run has MindSpore
submissions.

Where every run finds it: the kit's own cache folder (`KIT_CACHE`, `grader/.cache` in the kit's
install; the Gradescope zip and the PrairieLearn image bake it in at build time, with
`python -m grader.answer_key`), else the output folder's `.grader-cache` (a kit installed where the
grading user may not write). Its key is `fingerprint.code_fingerprint()`: the kit's code, the solutions and the
framework versions (not the language, the limits or the templates, which change no output).

The cache holds the answer key, so only the grader's own user may read it: its folder is 0700 and
each file 0600, written through a temporary file and a rename (a link at its path is replaced,
never followed). The sandbox hides the kit's folder from student code as it hides the solutions.
Files are read back with the sandbox's pickle-free codec.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import grader
from grader.diagnosis.catalogue.variants import VariantRun, all_variants
from grader.fingerprint import code_fingerprint, version
from grader.frameworks import MINDSPORE, PYTORCH, SEEDED_PROBES, namespace_for
from grader.probe_outputs import ProbeOutputs, ProbeResults
from grader.probes import PROBES, load_all
from grader.records import ProbeError
from grader.reference_code import ModuleNamespace, run_in_process
from grader.sandbox import codec
from grader.sandbox.boundary import result_from_record

KIT_CACHE = Path(grader.__file__).resolve().parent / ".cache"  # the kit install's own cache folder


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
    """The reference's outputs per track and the variants' outputs, made on first use, or read from
    the first of `cache_dirs` that holds them for this `fingerprint` (and written to the first
    that can take them)."""

    def __init__(self, cache_dirs: Sequence[Path] = (), fingerprint: str = ""):
        self.cache_dirs = list(cache_dirs) if fingerprint else []
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
        file_name = f"answer-key-{self.fingerprint}.bin"
        for document in self._cached(file_name):
            try:
                reference = {name: result_from_record(r) for name, r in document["reference"].items()}
                runs = [
                    VariantRun(variant, {name: result_from_record(r) for name, r in results.items()})
                    for variant, results in zip(variants, document["variants"], strict=True)
                ]
                break
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
        else:
            reference, runs = reference_results(), variant_runs()
            self._store(
                file_name,
                {
                    "reference": {name: _record(r) for name, r in reference.items()},
                    "variants": [{name: _record(r) for name, r in run.results.items()} for run in runs],
                },
                "answer-key-[!m]*.bin",
            )  # not the MindSpore track's
        self._references[PYTORCH] = ProbeOutputs(reference)
        self._variants = runs

    def _mindspore_seeded(self) -> ProbeResults:
        installed = version("mindspore")  # importable without metadata: nothing is cached
        file_name = f"answer-key-mindspore-{installed}-{self.fingerprint}.bin"
        for document in self._cached(file_name) if installed else ():
            try:
                return {name: result_from_record(record) for name, record in document.items()}
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
        results = mindspore_seeded_results()
        if installed:
            self._store(file_name, {name: {"ok": r} for name, r in results.items()}, "answer-key-mindspore-*.bin")
        return results

    def _cached(self, name: str) -> Iterator[Any]:
        """The documents cached under NAME, in the order of `cache_dirs` (those that can be read)."""
        for folder in self.cache_dirs:
            document = _read(folder / name)
            if document is not None:
                yield document

    def _store(self, name: str, document: Any, stale: str) -> None:
        """In the first cache folder that takes it."""
        for folder in self.cache_dirs:
            if _write(folder / name, document, stale):
                return


def _record(result: Any) -> dict:
    """A probe's result as the codec stores it (as the sandbox sends it)."""
    if isinstance(result, ProbeError):
        error = asdict(result)
        error["frames"] = [asdict(frame) for frame in result.frames]
        error["params"] = {k: v if type(v) in (bool, int, float, str) else str(v) for k, v in result.params.items()}
        return {"error": error}
    return {"ok": result}


def _read(path: Path) -> Any:
    """The cached document at PATH, or None when there is none (or it cannot be read)."""
    try:
        # for no other user to read (student code, where neither bubblewrap nor a mount namespace
        # hides the reports), also when an earlier version of the kit made the folder
        if path.parent.is_dir():
            try:
                os.chmod(path.parent, 0o700)
            except OSError:
                pass  # not the folder's owner: readable or not, as its owner left it
        return codec.decode(path.read_bytes())
    except (OSError, codec.CodecError, KeyError, TypeError, ValueError, AttributeError):
        return None


def _write(path: Path, document: Any, stale: str) -> bool:
    """Store DOCUMENT at PATH and remove the folder's other files matching the glob STALE (older kit
    versions); whether it was stored. Best effort: a cache that cannot be written is computed again
    next time."""
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
        return True
    except (OSError, codec.CodecError):
        return False


def bake(folder: Path = KIT_CACHE) -> list[Path]:
    """Compute the answer key into FOLDER now (a grading platform's image, at build time), unless it
    is there already; the files that hold it."""
    key = AnswerKey([folder], code_fingerprint())
    key.reference(PYTORCH)
    if version("mindspore"):
        key.reference(MINDSPORE)
    return sorted(folder.glob(f"answer-key-*{key.fingerprint}.bin"))


if __name__ == "__main__":
    for file in bake(Path(sys.argv[1]) if len(sys.argv) > 1 else KIT_CACHE):
        print(file)
