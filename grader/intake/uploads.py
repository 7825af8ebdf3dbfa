"""A student's files, wherever they are: a folder on disk (`grader.intake.files.Folder`), a folder of
a zip (`ZipFolder`), or files an LMS renamed (`RenamedFolder`). Each is read one folder at a time
through the same three calls (`entries`, `size`, `read`), so that one set of rules reads them all:
which folder of an upload holds the modules (`holds`, `upload_level`), and which of its files are
read, in which order, within which caps and budgets (`read_level`, `grader.intake.submission`).

A folder that holds no module and no notebook but a zip (a student who handed in `ch3.zip`) is
read through that zip, one level deep.

Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grader.intake.archives import MAX_INNER_ZIP_BYTES, ZIP_SUFFIX, Zip
from grader.intake.files import MAX_ENTRIES, Entry, Refused
from grader.intake.printable import decode_name
from grader.intake.submission import MAX_NOTEBOOK_BYTES, MAX_SOURCE_BYTES, Assembly, is_module_file, reading_order
from grader.records import MODULES, IntegrityNote

IGNORED_FOLDERS = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}


class Level(Protocol):
    def entries(self, limit: int = ..., keep: Callable[[str], bool] = ...) -> list[Entry]: ...

    def size(self, name: str) -> int: ...

    def read(self, name: str, cap: int) -> bytes: ...

    def subfolder(self, name: str) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


class ZipFolder:
    """One folder of a zip, read like a folder on disk (no link, no special file, capped)."""

    def __init__(self, archive: Zip, parts: tuple[str, ...] = ()):
        self.archive, self.parts = archive, parts

    def __enter__(self) -> ZipFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def entries(self, limit: int = MAX_ENTRIES, keep: Callable[[str], bool] = lambda name: True) -> list[Entry]:
        names = self.archive.listing.get(self.parts, {})
        return [Entry(n, kind) for n, kind in sorted(names.items(), key=lambda kv: os.fsencode(kv[0])) if keep(n)][
            :limit
        ]

    def member(self, name: str):
        return self.archive.by_path.get(self.parts + (name,))

    def size(self, name: str) -> int:
        member = self.member(name)
        return member.info.file_size if member is not None else 0

    def read(self, name: str, cap: int) -> bytes:
        member = self.member(name)
        if member is None:
            raise Refused("gone" if name not in self.archive.listing.get(self.parts, {}) else "folder", name)
        return self.archive.read(member, cap)

    def subfolder(self, name: str) -> ZipFolder:
        if self.archive.listing.get(self.parts, {}).get(name) != "folder":
            raise Refused("file", name)
        return ZipFolder(self.archive, self.parts + (name,))


class RenamedFolder:
    """Files of a folder under the names their student gave them (an LMS prefixes its own)."""

    def __init__(self, level: Level, names: dict[str, str]):
        self.level, self.names = level, names  # the student's name -> the name in `level`

    def __enter__(self) -> RenamedFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def entries(self, limit: int = MAX_ENTRIES, keep: Callable[[str], bool] = lambda name: True) -> list[Entry]:
        return [Entry(n, "file") for n in sorted(self.names, key=os.fsencode) if keep(n)][:limit]

    def size(self, name: str) -> int:
        return self.level.size(self.names[name]) if name in self.names else 0

    def read(self, name: str, cap: int) -> bytes:
        try:
            return self.level.read(self.names[name], cap)
        except Refused as exc:
            raise Refused(exc.reason, name) from None

    def subfolder(self, name: str) -> Level:
        raise Refused("file", name)


# -- which folder holds the submission --------------------------------------------------------------


def holds(folder: Level, zips: bool = False) -> bool:
    """Modules (.py or module-named notebooks) directly in FOLDER; or, failing that, a notebook in
    it (one for the whole chapter) and no student folders beside it; with `zips`, failing that, a
    zip and nothing else (a student's upload of one zip)."""
    entries = folder.entries(keep=lambda name: not name.startswith("."))
    if any(is_module_file(e.name) for e in entries):
        return True
    if not any(e.name.endswith(".ipynb") for e in entries):
        if not zips:
            return False
        visible = [e for e in entries if e.name not in IGNORED_FOLDERS]
        return bool(visible) and all(e.kind == "file" and e.name.lower().endswith(ZIP_SUFFIX) for e in visible)
    for entry in entries:
        if entry.kind != "folder" or entry.name in IGNORED_FOLDERS:
            continue
        try:
            with folder.subfolder(entry.name) as child:
                if child.entries(limit=1, keep=lambda name: name.endswith((".py", ".ipynb"))):
                    return False  # a student folder beside the notebook: FOLDER is a class
        except (Refused, OSError):
            continue
    return True


@contextmanager
def descend(root: Level, parts: tuple[str, ...]) -> Iterator[Level]:
    """The folder ROOT/parts..., each step without following a link (ROOT itself stays open)."""
    opened: list[Level] = []
    try:
        folder = root
        for part in parts:
            folder = folder.subfolder(part)
            opened.append(folder)
        yield folder
    finally:
        for folder in reversed(opened):
            folder.__exit__(None, None, None)


def upload_level(root: Level, depth: int = 4, folders: int = 200, zips: bool = True) -> tuple[str, ...] | None:
    """Where in ROOT an upload's modules are: ROOT itself (``()``), or the folder inside it that
    holds them (students often upload a zip with a folder in it), never through a link; of two or
    more at the same depth (``ch3/`` and ``ch3_backup/``), the most complete (`upload_levels`);
    None if there is none."""
    found = upload_levels(root, depth, folders, zips)
    return found[0] if found else None


def upload_levels(root: Level, depth: int = 4, folders: int = 200, zips: bool = True) -> list[tuple[str, ...]]:
    """Every folder of ROOT that holds an upload's modules at the shallowest depth where one does,
    breadth first, never through a link, at most FOLDERS folders looked at: the most complete first
    (the most module files, then a notebook, then the first in name order)."""
    queue: deque[tuple[str, ...]] = deque([()])
    seen = 0
    found: list[tuple[tuple[int, int], tuple[str, ...]]] = []
    while queue and seen < folders:
        parts = queue.popleft()
        if found and len(parts) > len(found[0][1]):
            break
        seen += 1
        try:
            with descend(root, parts) as folder:
                if holds(folder, zips):
                    found.append((_completeness(folder), parts))
                elif len(parts) < depth:
                    queue.extend(
                        parts + (e.name,)
                        for e in folder.entries()
                        if e.kind == "folder" and not e.name.startswith(".") and e.name not in IGNORED_FOLDERS
                    )
        except (Refused, OSError):
            continue
    return [parts for _, parts in sorted(found, key=lambda f: (-f[0][0], -f[0][1], [os.fsencode(p) for p in f[1]]))]


def _completeness(folder: Level) -> tuple[int, int]:
    """(module files, notebooks) directly in FOLDER: how much of the chapter it holds, by names only."""
    names = [e.name for e in folder.entries(keep=worth_reading)]
    return len({n.lower() for n in names if is_module_file(n)}), sum(n.endswith(".ipynb") for n in names)


MAX_PLACES = 8  # places of an upload measured (each read as the grader reads it), shallowest first


@dataclass(frozen=True)
class Place:
    """Where an upload's submission may be: a folder's own files (`zip` empty), or a zip in it."""

    parts: tuple[str, ...]
    zip: str = ""

    def shown(self) -> str:
        return "/".join(self.parts + ((self.zip,) if self.zip else ())) or "."


def upload_places(root: Level, depth: int = 4, folders: int = 200, zips: bool = True) -> list[Place]:
    """The places of ROOT that could hold an upload's submission, breadth first (ROOT itself first),
    never through a link, at most FOLDERS folders looked at and MAX_PLACES places: a folder holding
    modules or notebooks, and (with `zips`) each zip in a folder, after that folder's own files."""
    queue: deque[tuple[str, ...]] = deque([()])
    seen, found = 0, list[Place]()
    while queue and seen < folders and len(found) < MAX_PLACES:
        parts = queue.popleft()
        seen += 1
        try:
            with descend(root, parts) as folder:
                entries = folder.entries(keep=lambda name: not name.startswith("."))
        except (Refused, OSError):
            continue
        if any(e.kind == "file" and worth_reading(e.name) for e in entries):
            found.append(Place(parts))
        if zips:
            found += [Place(parts, e.name) for e in entries if e.kind == "file" and e.name.lower().endswith(ZIP_SUFFIX)]
        if len(parts) < depth:
            queue.extend(parts + (e.name,) for e in entries if e.kind == "folder" and e.name not in IGNORED_FOLDERS)
    return found[:MAX_PLACES]


def read_upload(root: Level, assembly: Assembly, zips: bool = True) -> None:
    """The most complete place of ROOT (`upload_places`), read into ASSEMBLY. Each place is measured
    by what the grader finds in it (the modules recognised, from .py files, notebooks and zips
    alike), all of them within ASSEMBLY's remaining budget; the most modules wins, a tie goes to
    the first place found (the shallowest, then the first in name order, a folder's own files
    before its zips). When other places hold code too (a module or notebook file, or a zip in
    which a module is recognised), a remark names the graded one and, in brackets, the others."""
    places = upload_places(root, zips=zips)
    if not places:
        return
    counts = _measure(root, places, assembly.left) if len(places) > 1 else [0]
    order = sorted(range(len(places)), key=lambda i: (-counts[i], i))
    chosen = places[order[0]]
    holding = [places[i].shown() for i in order[1:] if counts[i] or not places[i].zip]
    if holding:
        assembly.remarks.append(IntegrityNote("upload-folder", f"{chosen.shown()} ({', '.join(holding)})"))
    _read_place(root, chosen, assembly)


def _measure(root: Level, places: list[Place], budget: int) -> list[int]:
    """How many modules the grader recognises in each place, all read within one BUDGET of bytes."""
    counts = []
    for place in places:
        trial = Assembly("", Path("."), near_misses=False)
        trial.left = budget
        _read_place(root, place, trial)
        budget = max(0, trial.left)
        counts.append(len((set(trial.py) | set(trial.generated)) & set(MODULES)))
    return counts


def _read_place(root: Level, place: Place, assembly: Assembly) -> None:
    try:
        with descend(root, place.parts) as folder:
            if place.zip:
                read_inner_zip(folder, place.zip, assembly)
            else:
                read_level(folder, assembly, zips=False)
    except (Refused, OSError):
        return


# -- reading the files of one folder -----------------------------------------------------------------


def worth_reading(name: str) -> bool:
    return not name.startswith(".") and (name.endswith(".ipynb") or is_module_file(name))


def read_level(folder: Level, assembly: Assembly, zips: bool = True) -> None:
    """The modules and notebooks directly in FOLDER, into ASSEMBLY, in reading order and within its
    caps and budgets (a refused file is a note naming it); when there are none, the first zip in it
    (with `zips`), read the same way (one level deep)."""
    names = [e.name for e in folder.entries(keep=worth_reading)]
    for filename in reading_order(names):
        notebook = filename.endswith(".ipynb")
        cap = MAX_NOTEBOOK_BYTES if notebook else MAX_SOURCE_BYTES
        try:  # (a file over its own cap is refused by the read, with its own note)
            if not assembly.admits(filename, min(folder.size(filename), cap)):
                continue
            assembly.add(filename, folder.read(filename, cap))
        except Refused as exc:
            assembly.problems.append(file_note(exc.reason, filename, notebook))
    if names or not zips:
        return
    inner = [e.name for e in folder.entries(keep=lambda n: n.lower().endswith(ZIP_SUFFIX) and not n.startswith("."))]
    if inner:
        read_inner_zip(folder, inner[0], assembly)


def read_inner_zip(folder: Level, name: str, assembly: Assembly) -> None:
    """A zip a student handed in: the folder in it that holds the modules, read into ASSEMBLY."""
    try:
        if not assembly.admits(name, min(folder.size(name), MAX_INNER_ZIP_BYTES)):
            return
        data = folder.read(name, MAX_INNER_ZIP_BYTES)
        assembly.left -= len(data)
        archive = Zip(data)
    except Refused as exc:
        assembly.problems.append(file_note(exc.reason, name, False))
        return
    with archive:
        read_upload(ZipFolder(archive), assembly, zips=False)


def file_note(reason: str, filename: str, notebook: bool) -> IntegrityNote:
    if notebook and reason in ("too-large", "unreadable"):
        return IntegrityNote(f"submission.notebook-{reason}", decode_name(filename))
    return IntegrityNote(f"submission.file-{reason}", decode_name(filename))
