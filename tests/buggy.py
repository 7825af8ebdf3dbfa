"""The buggy submissions of the kit's tests, built from tests/submissions/buggy.toml: the reference as a
student hands it in, with one known mistake written in by edits (see the manifest's header)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "submissions" / "buggy.toml"
_SUFFIXES = re.compile(r"(-(mha|ex3_2|ex3_3|3_3|ms))?(-\d+)?$")
_CHECKPOINT = re.compile(r"(  #)? *\[checkpoint: [^\]]*\]")


@dataclass(frozen=True)
class Buggy:
    name: str
    misconception: str
    track: str  # "pytorch" or "mindspore"
    why: str
    sources: dict[str, str]  # module -> text: only the modules this submission hands in
    changed: tuple[str, ...]  # the modules the mistake is written in

    def write(self, folder: Path) -> Path:
        """The submission as a student's folder: one .py file per module it hands in."""
        folder.mkdir(parents=True, exist_ok=True)
        for module, text in self.sources.items():
            (folder / f"{module}.py").write_text(text, encoding="utf-8")
        return folder


def as_handed_in(text: str) -> str:
    """A reference module as a student would hand it in: sibling imports, no checkpoint declarations."""
    text = re.sub(r"^from \.(\w+) import", r"from \1 import", text, flags=re.M)
    return _CHECKPOINT.sub("", text)


def _reference(track: str, module: str) -> str:
    folder = ROOT / "solutions" / ("mindspore" if track == "mindspore" else "")
    return as_handed_in((folder / f"{module}.py").read_text(encoding="utf-8"))


def _build(name: str, entry: dict) -> Buggy:
    track = "mindspore" if name.endswith("-ms") else "pytorch"
    sources = {module: _reference(track, module) for module in entry.get("also", [])}
    changed: list[str] = []
    for module, old, new in entry["edits"]:
        if module not in changed:
            changed.append(module)
            sources[module] = f"# BUGGY on purpose: {entry['why']}\n" + _reference(track, module)
        assert old in sources[module], f"{name}: {old!r} is not in the reference's {module}"
        sources[module] = sources[module].replace(old, new)
    misconception = _SUFFIXES.sub("", name)
    return Buggy(name, misconception, track, entry["why"], sources, tuple(changed))


@cache
def _all() -> dict[str, Buggy]:
    manifest = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))
    return {name: _build(name, entry) for name, entry in sorted(manifest.items())}


def buggy(name: str) -> Buggy:
    return _all()[name]


def all_buggy(track: str | None = None) -> list[Buggy]:
    """Every buggy submission (of one track), by name."""
    return [b for b in _all().values() if track is None or b.track == track]
