"""Reading a submission's files without trusting them.

A submission is hostile data. Only regular files directly inside the student's folder are read:

* the folder is opened once (``O_DIRECTORY | O_NOFOLLOW``: a student folder that is a link is
  refused) and every file is opened relative to it with ``O_NOFOLLOW``, so no link is followed at
  any point: not the folder, not a file, not a link in the middle of a path;
* before opening, ``lstat`` must show a regular file (no FIFO, device, socket or directory posing
  as a module: opening those can block or have side effects); after opening, ``fstat`` must show
  the same file, with one link only (a hard link could be a file outside the submission: another
  student's, or the kit's own) and a size within the cap;
* at most cap + 1 bytes are ever read (a file that grows after ``fstat`` is still refused).

What is refused raises `Refused`, whose `reason` names an integrity note
(``integrity.submission.file-<reason>``); the caller reports it and loses only that file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
MAX_ENTRIES = 4096  # names kept from one folder listing (those a caller asks for)
MAX_SCANNED = 1_000_000  # names looked at in one folder; a folder with more is read no further


class Refused(Exception):
    """A file or folder that is not read. `reason`: link, hardlink, folder (where a file was
    expected), file (where a folder was expected), special, too-large, unreadable, gone."""

    def __init__(self, reason: str, name: str = ""):
        super().__init__(f"{name}: {reason}" if name else reason)
        self.reason = reason
        self.name = name


@dataclass(frozen=True)
class Entry:
    """One name in a folder, as `lstat` sees it (never following a link)."""

    name: str  # as the OS lists it (undecodable bytes kept as surrogate escapes)
    kind: str  # file | folder | link | special | gone

    @property
    def is_file(self) -> bool:
        return self.kind == "file"


def kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    return "special"


class Folder:
    """An open folder (a file descriptor): files are listed and read relative to it.

    `Folder.open(path)` follows no link in the last component of `path` (`follow=True` trusts it:
    the folder the instructor named on the command line)."""

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: Path, follow: bool = False) -> Folder:
        flags = _OPEN_DIR & ~os.O_NOFOLLOW if follow else _OPEN_DIR
        try:
            return cls(os.open(path, flags), Path(path))
        except OSError as exc:
            raise _refusal(exc, str(path), _lkind(path)) from None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def entries(self, limit: int = MAX_ENTRIES, keep: Callable[[str], bool] = lambda name: True) -> list[Entry]:
        """The names in the folder that `keep` accepts (at most `limit` of them; at most MAX_SCANNED
        names looked at), sorted, with their kinds."""
        names: list[str] = []
        with os.scandir(self.fd) as listing:
            for scanned, entry in enumerate(listing):
                if scanned >= MAX_SCANNED or len(names) >= limit:
                    break
                if keep(entry.name):
                    names.append(entry.name)
        return [Entry(name, self.kind(name)) for name in sorted(names, key=os.fsencode)]

    def size(self, name: str) -> int:
        """The size `lstat` gives (0 for what is no regular file: reading it will say why)."""
        try:
            info = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return 0
        return info.st_size if stat.S_ISREG(info.st_mode) else 0

    def kind(self, name: str) -> str:
        try:
            return kind_of(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return "gone"

    def subfolder(self, name: str) -> Folder:
        """A folder inside this one, opened without following a link."""
        _one_name(name)
        try:
            return Folder(os.open(name, _OPEN_DIR, dir_fd=self.fd), self.path / name)
        except OSError as exc:
            raise _refusal(exc, name, self.kind(name)) from None

    def read(self, name: str, cap: int) -> bytes:
        """The bytes of the regular file `name` directly in this folder; raises Refused."""
        _one_name(name)
        try:
            before = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError as exc:
            raise _refusal(exc, name) from None
        _check(before, name, cap)
        try:
            fd = os.open(name, _OPEN_FILE, dir_fd=self.fd)
        except OSError as exc:
            raise _refusal(exc, name) from None
        try:
            after = os.fstat(fd)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
                raise Refused("gone", name)  # replaced between the two looks
            _check(after, name, cap)
            return _read_at_most(fd, cap, name)
        finally:
            os.close(fd)


def _one_name(name: str) -> None:
    """Refuse what is no single name in a folder: a path ("a/b", "..", "."), nothing, or a name the
    system cannot take (a null character)."""
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise Refused("unreadable", name)


def _check(info: os.stat_result, name: str, cap: int) -> None:
    kind = kind_of(info.st_mode)
    if kind != "file":
        raise Refused(kind, name)
    if info.st_nlink != 1:
        raise Refused("hardlink", name)
    if info.st_size > cap:
        raise Refused("too-large", name)


def _read_at_most(fd: int, cap: int, name: str) -> bytes:
    chunks, size = [], 0
    while size <= cap:
        try:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
        except OSError:
            raise Refused("unreadable", name) from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > cap:
        raise Refused("too-large", name)
    return b"".join(chunks)


def _refusal(exc: OSError, name: str, kind: str = "") -> Refused:
    """Why opening `name` failed; `kind` is what lstat says it is (for folders: O_DIRECTORY |
    O_NOFOLLOW on a link fails with ENOTDIR, not ELOOP)."""
    if exc.errno == errno.ELOOP or kind == "link":  # O_NOFOLLOW met a link
        return Refused("link", name)
    if exc.errno == errno.ENOTDIR:
        return Refused("file" if kind == "file" else "special", name)
    if exc.errno == errno.ENOENT:
        return Refused("gone", name)
    return Refused("unreadable", name)


def _lkind(path: Path) -> str:
    try:
        return kind_of(os.lstat(path).st_mode)
    except OSError:
        return "gone"


def read_file(path: Path, cap: int) -> bytes:
    """One regular file, by path: its folder is trusted (opened following links), the file itself
    is read by the rules above (no link, no hard link, no special file, at most `cap` bytes)."""
    path = Path(path)
    with Folder.open(path.parent, follow=True) as folder:
        return folder.read(path.name, cap)


def open_beneath(root: Path, parts: tuple[str, ...]) -> Folder:
    """The folder ROOT/part/part/..., where ROOT is trusted and nothing below it may be a link (each
    folder is opened with O_NOFOLLOW relative to the previous one). The caller closes it."""
    folder = Folder.open(root, follow=True)
    try:
        for part in parts:
            inner = folder.subfolder(part)
            folder.close()
            folder = inner
        return folder
    except BaseException:
        folder.close()
        raise


def read_beneath(root: Path, parts: tuple[str, ...], cap: int) -> bytes:
    """ROOT/part/part/.../file, where ROOT is trusted and nothing below it may be a link (`open_beneath`)."""
    if not parts:
        raise Refused("folder", str(root))
    folder = open_beneath(root, parts[:-1])
    try:
        return folder.read(parts[-1], cap)
    finally:
        folder.close()


def read_below(root: Path | None, path: Path, cap: int) -> bytes:
    """The file at PATH, read by `read_beneath` when it lies below ROOT (nothing between ROOT and the
    file may be a link: a student's folder that links to a classmate's is refused), else by
    `read_file`."""
    if root is not None:
        try:
            parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
        except ValueError:
            parts = ()
        if parts:
            return read_beneath(Path(root), parts, cap)
    return read_file(path, cap)
