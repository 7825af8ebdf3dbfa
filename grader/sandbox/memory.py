"""One memory limit per submission: a memory control group (cgroup) for each slot of a pool.

A slot grades one submission at a time, so the group's limit (`Limits.memory_bytes`) holds
everything that submission's processes make: their heaps, shared memory, memfd and tmpfs files
(/tmp, /dev/shm), in every process it starts. The kernel charges each page to the group of the
process that first touched it; the pages a child shares with the warm worker it was forked from
stay the worker's. Past the limit the kernel's OOM killer stops the submission's processes (all of
them in cgroup v2: memory.oom.group) and counts the kill in the group's events, which the slot's
watcher reads (`oom`) to tell the student that memory, not a crash, stopped the code.

cgroup v2 (memory.max, memory.swap.max = 0) where the machine's unified hierarchy has the memory
controller, else cgroup v1's memory hierarchy (memory.limit_in_bytes and, with swap accounting,
memory.memsw.limit_in_bytes). v2's groups are made beside the grader's own (a group with
processes cannot give its controllers to groups below it); v1's below it. Where neither can be
made (no cgroup file system, read-only, no right to write it: most machines where the grader is
not root), `MemoryGroups.reason` says why and the pool reports it as a missing protection.

The pool opens, for each worker it starts, the slot group's cgroup.procs (written to, "0", by each
child before any student code runs: the child joins the group) and its events file (read by the
watcher); the worker gets both as inherited descriptors and never sees /sys.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "attention-kit-"
RMDIR_SECONDS = 5.0  # for a stopped worker's processes to leave their group


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's memory control group is: the cgroup version and its folder."""

    version: int
    own: Path
    root: bool  # the hierarchy's root (as a container's cgroup namespace shows it): no parent to go to


@dataclass(frozen=True)
class SlotGroup:
    """One slot's group: its folder, and the files a worker gets descriptors of."""

    path: Path
    version: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    @property
    def events(self) -> Path:
        return self.path / ("memory.events" if self.version == 2 else "memory.oom_control")


class MemoryGroups:
    """The slot groups of one pool (`slots` slots, named after `tag`), each limited to `limit`
    bytes; `groups` is empty and `reason` says why when the machine offers none."""

    def __init__(self, slots: int, limit: int, tag: str):
        self.groups: list[SlotGroup] = []
        self.base: Path | None = None
        self.reason = ""
        try:
            hierarchy = find()
            self.base = _make_base(hierarchy, f"{PREFIX}{os.getpid()}-{tag}")
            self.groups = [_make_slot(self.base, hierarchy.version, slot, limit) for slot in range(slots)]
            _check_joining(self.groups[0])
        except OSError as exc:
            self.reason = _reason(exc)
            self.close()

    def descriptors(self, slot: int) -> tuple[int, int] | None:
        """Fresh descriptors (cgroup.procs for writing, the events for reading) of `slot`'s group,
        for a worker to inherit (the caller closes them once the worker has started); None
        without groups."""
        if not self.groups:
            return None
        group = self.groups[slot]
        procs = os.open(group.procs, os.O_WRONLY | os.O_CLOEXEC)
        try:
            return procs, os.open(group.events, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(procs)
            raise

    def close(self) -> None:
        """Remove the groups (once the workers have stopped: their processes leave them as they exit)."""
        for group in self.groups:
            _remove(group.path)
        if self.base is not None:
            _remove(self.base)
        self.groups, self.base = [], None


def find() -> Hierarchy:
    """This process's memory control group: cgroup v2's when its unified hierarchy has the memory
    controller, else v1's memory hierarchy. OSError when there is none."""
    mounts = _mounts()
    groups = _own_groups()
    if "" in groups and "cgroup2" in mounts:
        own, root = _folder(mounts["cgroup2"], groups[""])
        if "memory" in _words(own / "cgroup.controllers"):
            return Hierarchy(2, own, root)
    if "memory" in groups and "memory" in mounts:
        return Hierarchy(1, *_folder(mounts["memory"], groups["memory"]))
    raise OSError("no cgroup memory controller is mounted")


def _folder(mount: tuple[Path, str], group: str) -> tuple[Path, bool]:
    """The folder of `group` under a hierarchy mounted at `mount` (its mount point, and the group
    it shows), and whether it is that mount's top."""
    point, shown = mount
    shown = shown.rstrip("/")
    if shown and (group + "/").startswith(shown + "/"):
        group = group[len(shown) :]
    if not group.strip("/"):
        return point, True
    return point / group.strip("/"), False


def _make_base(hierarchy: Hierarchy, name: str) -> Path:
    """The folder the pool's slot groups go in, made (and, in v2, given the memory controller)."""
    if hierarchy.version == 1:
        parent = hierarchy.own
    else:
        parent = hierarchy.own if hierarchy.root else hierarchy.own.parent
        if "memory" not in _words(parent / "cgroup.subtree_control"):
            _write(parent / "cgroup.subtree_control", "+memory")
    _remove_stale(parent)
    base = parent / name
    base.mkdir()
    if hierarchy.version == 2:
        _write(base / "cgroup.subtree_control", "+memory")
    return base


def _make_slot(base: Path, version: int, slot: int, limit: int) -> SlotGroup:
    group = SlotGroup(base / f"slot-{slot}", version)
    group.path.mkdir()
    if version == 2:
        _write(group.path / "memory.max", str(limit))
        _write(group.path / "memory.oom.group", "1")
        if (group.path / "memory.swap.max").exists():
            _write(group.path / "memory.swap.max", "0")
    else:
        _write(group.path / "memory.limit_in_bytes", str(limit))
        if (group.path / "memory.memsw.limit_in_bytes").exists():
            _write(group.path / "memory.memsw.limit_in_bytes", str(limit))  # no swap beyond the limit
    return group


def _check_joining(group: SlotGroup) -> None:
    """Whether a process started from here can join the group (a user may make groups where the
    kernel does not let them move processes): a shell joins it the way a child does."""
    procs = os.open(group.procs, os.O_WRONLY)
    try:
        done = subprocess.run(  # printf writes "0" to its stdout: cgroup.procs
            ["/bin/sh", "-c", "printf 0"],
            stdout=procs,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (subprocess.SubprocessError, FileNotFoundError) as exc:
        raise OSError(f"cannot test joining a memory group: {exc}") from exc
    finally:
        os.close(procs)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OSError(f"cannot move a process into a memory group ({detail[-1] if detail else done.returncode})")


def _mounts() -> dict[str, tuple[Path, str]]:
    """Mount points, with the group each shows at its top: "cgroup2" for the unified hierarchy,
    and each v1 controller's name."""
    found: dict[str, tuple[Path, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        kind, _, options = (line.split(" - ", 1)[1].split() + ["", "", ""])[:3]
        mount = (Path(fields[4].replace("\\040", " ")), fields[3].replace("\\040", " "))
        if kind == "cgroup2":
            found.setdefault("cgroup2", mount)
        elif kind == "cgroup":
            for option in options.split(","):
                found.setdefault(option, mount)
    return found


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller ("" for v2's unified hierarchy)."""
    groups: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _write(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _remove(path: Path) -> None:
    """rmdir, waiting a little for the processes of stopped workers to leave the group."""
    deadline = time.monotonic() + RMDIR_SECONDS
    while True:
        try:
            for slot in [p for p in path.iterdir() if p.is_dir()] if path.exists() else []:
                _remove(slot)
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)


def _remove_stale(parent: Path) -> None:
    """Groups a grading run that ended without closing its pools left behind (its pid is gone)."""
    for path in parent.glob(f"{PREFIX}*"):
        pid = path.name.removeprefix(PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            for slot in [p for p in path.iterdir() if p.is_dir()]:
                _rmdir_quietly(slot)
            _rmdir_quietly(path)


def _rmdir_quietly(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _reason(exc: OSError) -> str:
    """Why no group could be made, short (e.g. "[Errno 30] Read-only file system: '/sys/…'")."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:159] + "…"
