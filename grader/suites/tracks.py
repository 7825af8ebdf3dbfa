"""The reference each track is graded against (trusted side).

Both tracks are compared with the PyTorch reference's probe outputs, except the probes of the
book's seeded runs (`grader.frameworks.SEEDED_PROBES`): a MindSpore submission's seeded outputs
come from MindSpore's random stream and are compared with the MindSpore reference's
(`solutions.mindspore`, the CPU values of exercise-api.md §4). MindSpore is imported here only
when a run has MindSpore submissions, and its seeded outputs are cached per kit version.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from grader.diagnosis import Diagnoser, VariantRun
from grader.frameworks import MINDSPORE, PYTORCH, SEEDED_PROBES, namespace_for
from grader.records import ProbeError
from grader.sandbox import codec
from grader.sandbox.pool import result_from_record
from grader.suites import cache as baseline_cache
from grader.suites.seam import ModuleNamespace, ProbeResults, Seam, run_in_process


def mindspore_seeded_results() -> ProbeResults:
    """The MindSpore reference's outputs on the seeded probes; any failure is a bug in the kit."""
    ns = namespace_for(MINDSPORE, ModuleNamespace("solutions.mindspore"))
    results = run_in_process(ns, probes=sorted(SEEDED_PROBES))
    broken = {name: r for name, r in results.items() if isinstance(r, ProbeError)}
    if broken:
        raise RuntimeError(f"the MindSpore reference fails probes: {broken}")
    return results


class TrackBaselines:
    """Reference seams and diagnosers per track, made on first use."""

    def __init__(self, reference: Seam, runs: list[VariantRun], cache_dir: Path | None = None,
                 fingerprint: str = ""):
        self.torch_reference = reference
        self.runs = runs
        self.cache_dir = cache_dir
        self.fingerprint = fingerprint
        self._references: dict[str, Seam] = {PYTORCH: reference}
        self._diagnosers: dict[str, Diagnoser] = {}

    def reference(self, track: str) -> Seam:
        if track not in self._references:
            results = dict(self.torch_reference.results)
            results.update(self._seeded(track))
            self._references[track] = Seam(results)
        return self._references[track]

    def diagnoser(self, track: str) -> Diagnoser:
        if track not in self._diagnosers:
            self._diagnosers[track] = Diagnoser(self.reference(track), self.runs, traced=track == PYTORCH)
        return self._diagnosers[track]

    def _seeded(self, track: str) -> ProbeResults:
        if track != MINDSPORE:
            raise ValueError(f"unknown track {track!r}")
        cache = None
        version = _version("mindspore")
        if self.cache_dir is not None and self.fingerprint and version:
            cache = self.cache_dir / f"baselines-mindspore-{version}-{self.fingerprint}.bin"
        cached = baseline_cache.read(cache)
        if cached is not None:
            try:
                document = codec.decode(cached)
                return {name: result_from_record(record) for name, record in document.items()}
            except (codec.CodecError, KeyError, TypeError, ValueError, AttributeError):
                pass
        results = mindspore_seeded_results()
        if cache is not None:
            try:
                data = codec.encode({name: {"ok": r} for name, r in results.items()})
            except codec.CodecError:
                return results
            baseline_cache.write(cache, data, "baselines-mindspore-*.bin")
        return results


def _version(package: str) -> str:
    """The installed version of `package`, or "" (importable without metadata: nothing is cached)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
