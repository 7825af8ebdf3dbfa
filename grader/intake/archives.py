"""Zip files, read without trusting them, and without extracting anything.

A zip is read from its central directory: no member is written to disk, so no name in it can
reach outside (`../`, `/etc/passwd`, `C:\\`) or replace a file through a link. Its members are
checked before a byte of theirs is decompressed:

* a name that is absolute, has a drive, a `..` or an empty part, or a control character is refused
  (`zip-path`); a member stored as a link (`zip-link`) or as any other special file, an encrypted
  one (`zip-encrypted`) are refused;
* a member's declared size must be within its cap (a module's, a notebook's, a zip's inside a zip)
  and within the submission's budget, and it may not expand more than MAX_RATIO times (a zip bomb:
  `zip-bomb`); at most declared size + 1 bytes are ever decompressed, and a member that holds more
  than it declares is refused (`zip-damaged`);
* two members whose names differ only in case, Unicode form or invisible characters are both
  refused (`zip-duplicate`): on most computers only one of them could be unzipped, and which one the
  student saw is unknown;
* a zip inside a zip is read (a student's own zip in an LMS download), one level deep only.

Whatever is refused is a note naming the member, which costs only that file (and only the student
whose file it is). Standard library only (the student bundle ships a copy of intake/).
"""

from __future__ import annotations

import io
import os
import stat
import unicodedata
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.intake.files import Entry, Refused

MAX_MEMBERS = 100_000  # members of one zip looked at
MAX_RATIO = 200  # declared size / compressed size of a member larger than RATIO_FROM
RATIO_FROM = 1024 * 1024
MAX_INNER_ZIP_BYTES = 32 * 1024 * 1024  # a zip inside a zip (or in a student's folder)
ZIP_SUFFIX = ".zip"


def fold(name: str) -> str:
    """A name as a file system that ignores case and invisible characters would see it."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Mn") or c in "\t")
    return text.casefold()


def _bad_part(part: str) -> bool:
    return part in ("", ".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in part)


@dataclass(frozen=True)
class Member:
    """A member of a zip: its path (parts), and why it is refused, if it is."""

    parts: tuple[str, ...]
    info: zipfile.ZipInfo
    refused: str = ""

    @property
    def name(self) -> str:
        return "/".join(self.parts)


def _rehomed(parts: tuple[str, ...]) -> tuple[str, ...]:
    """Where a member whose path leads outside is listed, to be refused there: under its path's safe
    start (so that it costs the student whose folder it names), by its last name."""
    safe: list[str] = []
    for part in parts[:-1]:
        if _bad_part(part) or (not safe and len(part) > 1 and part[1] == ":"):
            if part == "":
                continue  # an absolute path's leading "/" (or a doubled one)
            break
        safe.append(part)
    last = parts[-1] if parts and not _bad_part(parts[-1]) else "?"
    return (*safe, last)


def _kind(info: zipfile.ZipInfo) -> str:
    kind = stat.S_IFMT(info.external_attr >> 16)
    if info.create_system != 3 or kind in (0, stat.S_IFREG, stat.S_IFDIR):
        return ""  # (a zip made elsewhere keeps no file type: its members are files)
    return "zip-link" if kind == stat.S_IFLNK else "zip-special"


def _member(info: zipfile.ZipInfo) -> Member | None:
    """The member as the zip lists it (None: a folder entry, nothing to read)."""
    raw = info.filename
    if raw.endswith(("/", "\\")) and not info.file_size:
        return None
    parts = tuple(raw.replace("\\", "/").split("/"))
    if raw.startswith(("/", "\\")) or (len(raw) > 1 and raw[1] == ":") or any(_bad_part(p) for p in parts):
        return Member(_rehomed(parts), info, "zip-path")
    refused = _kind(info) or ("zip-encrypted" if info.flag_bits & 0x1 else "")
    if not refused and info.compress_size and info.file_size > RATIO_FROM:
        refused = "zip-bomb" if info.file_size > MAX_RATIO * info.compress_size else ""
    return Member(parts, info, refused)


class Zip:
    """An open zip (from a trusted path, or from bytes already read by intake's rules)."""

    def __init__(self, source: Path | bytes):
        try:
            handle = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")  # noqa: SIM115
        except OSError:
            raise Refused("unreadable") from None
        try:
            self.zip = zipfile.ZipFile(handle)
            infos = self.zip.infolist()[:MAX_MEMBERS]
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError):
            handle.close()
            raise Refused("not-a-zip") from None
        members = [m for m in (_member(i) for i in infos) if m is not None]
        self.members = _without_duplicates(members)
        self.by_path = {m.parts: m for m in self.members}
        self.listing: dict[tuple[str, ...], dict[str, str]] = {}  # folder -> name -> kind
        for member in self.members:
            for depth in range(len(member.parts)):
                names = self.listing.setdefault(member.parts[:depth], {})
                name = member.parts[depth]
                if depth + 1 < len(member.parts):
                    names.setdefault(name, "folder")
                else:
                    names[name] = "special" if member.refused in ("zip-link", "zip-special", "zip-path") else "file"

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> Zip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, member: Member, cap: int) -> bytes:
        """A member's bytes (at most `cap`); raises Refused."""
        if member.refused:
            raise Refused(member.refused, member.name)
        declared = member.info.file_size
        if declared > cap:
            raise Refused("too-large", member.name)
        try:
            with self.zip.open(member.info) as stream:
                data = stream.read(declared + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
            raise Refused("zip-damaged", member.name) from None
        except zipfile.LargeZipFile:
            raise Refused("too-large", member.name) from None
        if len(data) != declared:
            raise Refused("zip-damaged", member.name)
        return data


def _without_duplicates(members: list[Member]) -> list[Member]:
    """Members whose paths a case-insensitive file system would take for one another, refused."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, member in enumerate(members):
        groups.setdefault(tuple(fold(p) for p in member.parts), []).append(index)
    out = list(members)
    for indexes in groups.values():
        if len(indexes) > 1:
            for index in indexes:
                out[index] = Member(members[index].parts, members[index].info, "zip-duplicate")
    return out


_OPEN: dict[tuple, Zip] = {}  # the zip PATH named, kept open for its students: one index, not one per student


@contextmanager
def opened(path: Path) -> Iterator[Zip]:
    """The zip at PATH (a path the instructor named), indexed once for all its students: the last
    zip opened stays open while the file is unchanged (same inode, size and time)."""
    try:
        info = os.stat(path)
    except OSError:
        raise Refused("unreadable") from None
    key = (os.path.abspath(path), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _OPEN:
        archive = Zip(Path(path))
        for old in _OPEN.values():
            old.close()
        _OPEN.clear()
        _OPEN[key] = archive
    yield _OPEN[key]


class ZipTree:
    """A zip's members as folders and files (`entries`), under a prefix (the zip's own folder for one
    student)."""

    def __init__(self, zip_file: Zip, prefix: tuple[str, ...] = ()):
        self.zip = zip_file
        self.prefix = prefix

    def entries(self, folder: tuple[str, ...] = ()) -> list[Entry]:
        """The names directly in `folder` (a member refused for its path or kind is listed as
        `special`, so that reading it says why)."""
        names = self.zip.listing.get(self.prefix + folder, {})
        return [Entry(name, kind) for name, kind in sorted(names.items())]

    def member(self, folder: tuple[str, ...], name: str) -> Member | None:
        return self.zip.by_path.get(self.prefix + folder + (name,))

    def size(self, folder: tuple[str, ...], name: str) -> int:
        member = self.member(folder, name)
        return member.info.file_size if member is not None else 0

    def read(self, folder: tuple[str, ...], name: str, cap: int) -> bytes:
        member = self.member(folder, name)
        if member is None:
            raise Refused("gone", name)
        return self.zip.read(member, cap)
