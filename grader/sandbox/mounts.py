"""What the sandbox's workers see: the bubblewrap command line, its mounts, and whether bubblewrap
can run on this machine at all (and if not, why)."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.worker import main; main()"
TMPFS_BYTES = 512 * 1024**2  # the sandbox's /tmp, where each submission's scratch folder lives
# Top-level directories of the host that the sandbox sees (read-only); symlinks stay symlinks.
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
THP_SETTINGS = Path("/sys/kernel/mm/transparent_hugepage")
MAX_REASON = 160


@dataclass(frozen=True)
class Bubblewrap:
    """Whether bubblewrap is installed, whether it runs here, and why not (its own words, short)."""

    installed: bool
    usable: bool
    reason: str = ""


def bubblewrap() -> Bubblewrap:
    """Tries bwrap with the namespaces the sandbox uses, and the one bind of /sys it makes. A
    container without user namespaces, or with a seccomp profile that forbids them, has bwrap
    installed but unusable."""
    if not shutil.which("bwrap"):
        return Bubblewrap(installed=False, usable=False)
    probe = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--ro-bind-try",
        str(THP_SETTINGS),
        str(THP_SETTINGS),
        "--die-with-parent",
        "true",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    except subprocess.TimeoutExpired:
        return Bubblewrap(installed=True, usable=False, reason="bwrap did not finish within 30 s")
    except OSError as exc:
        return Bubblewrap(installed=True, usable=False, reason=short(str(exc)))
    if done.returncode == 0:
        return Bubblewrap(installed=True, usable=True)
    reason = short(done.stderr.decode("utf-8", "replace")) or f"bwrap exited with status {done.returncode}"
    return Bubblewrap(installed=True, usable=False, reason=reason)


def short(text: str) -> str:
    """The first non-empty line of `text`, printable characters only, at most MAX_REASON long."""
    for line in text.splitlines():
        line = "".join(c for c in line if c.isprintable()).strip()
        if line:
            return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"
    return ""


def _site_packages_of(package: str) -> str:
    """The directory a package is installed in, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None and spec.origin else ""
    return os.path.dirname(os.path.dirname(origin)) if origin else ""


def python_roots() -> list[Path]:
    """What the interpreter needs to run: its prefixes and site-packages (never the kit's checkout)."""
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        _site_packages_of("torch"),
    }
    paths |= set(site.getsitepackages())
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    roots = sorted({Path(p).resolve() for p in paths if p and os.path.isdir(p)})
    return [r for r in roots if not any(other != r and other in r.parents for other in roots)]


def hide_targets(paths: list[Path], keep: list[Path]) -> list[Path]:
    """Directories to cover with an empty tmpfs: `paths`, except ancestors of what must stay visible."""
    targets: list[Path] = []
    for path in paths:
        path = path.resolve()
        if not path.is_dir() or path in keep:
            continue  # what must stay visible itself (e.g. a venv inside the repository)
        if any(path in k.parents for k in keep):
            targets += hide_targets([child for child in path.iterdir() if child.is_dir()], keep)
        else:
            targets.append(path)
    return sorted(set(targets))


def mounted_hidden(hidden: list[Path], roots: list[Path]) -> list[Path]:
    """Of the paths to hide, those the sandbox would otherwise see: only the system's and the
    interpreter's directories are mounted, so only what lies inside them (e.g. the kit installed
    into site-packages) needs covering."""
    mounted = roots + [Path("/") / name for name in SYSTEM_DIRS]
    return [p for p in hide_targets(hidden, roots) if any(root == p or root in p.parents for root in mounted)]


def bwrap_command(kit: Path, roots: list[Path], hidden: list[Path]) -> list[str]:
    """bubblewrap's part of a worker's command line, up to the interpreter; the staged `kit` is
    /tmp/kit inside. An allowlist: the system's directories and the interpreter's, read-only; an
    empty /tmp (where the scratch copies live); the staged probe code; the kernel's huge page
    settings, read-only. Nothing else of the host."""
    command = [
        "bwrap",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    # The empty /tmp first: an interpreter or venv that lives under the host's /tmp (a CI clone)
    # is bound on top of it below, instead of being covered by it.
    command += ["--dev", "/dev", "--proc", "/proc", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    # /dev/shm: a bounded tmpfs of its own (bubblewrap's is a folder of /dev's, unbounded), root's
    # and not writable as root (the children have their own uid), a child's own otherwise
    command += ["--size", str(TMPFS_BYTES), "--perms", "0755", "--tmpfs", "/dev/shm"]
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            command += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            command += ["--ro-bind", str(path), str(path)]
    for folder in reachable_parents(roots):
        command += ["--perms", "0711", "--dir", str(folder)]
    for root in roots:
        command += ["--ro-bind", str(root), str(root)]
    for path in hidden:
        command += ["--tmpfs", str(path)]
    # glibc reads the transparent huge page settings here (read-only kernel settings, nothing of
    # the host's users): without them its malloc never asks for huge pages (GLIBC_TUNABLES, see
    # connection.environment), and every child faults its large tensors in 4 kB at a time
    command += ["--ro-bind-try", str(THP_SETTINGS), str(THP_SETTINGS)]
    return command + ["--ro-bind", str(kit), "/tmp/kit", "--chdir", "/tmp"]


def reachable_parents(roots: list[Path]) -> list[Path]:
    """The folders bubblewrap must make on the way to the interpreter's directories, parents first,
    with mode 0711 (passable, not listable). Made by bubblewrap itself they would be root's and mode
    0700, so an interpreter under /root (pyenv) or another private folder would be out of reach of
    the sandbox's uid: only what the warm worker imported beforehand would work, and a student
    importing `statistics` would fail."""
    mounted = [Path("/") / name for name in SYSTEM_DIRS] + list(roots)
    parents = {parent for root in roots for parent in root.parents if parent not in (Path("/"), Path("/tmp"))}
    return sorted(
        (p for p in parents if not any(m == p or m in p.parents for m in mounted)), key=lambda p: (len(p.parts), str(p))
    )


def private_view(roots: list[Path], hidden: list[Path], staging: Path) -> str:
    """Without bubblewrap, as root: what the worker's own mount namespace covers and keeps
    reachable (`private_view.make`), as its --private-view argument. The whole host is visible
    there: a folder to hide that holds the interpreter (a venv inside the kit's checkout) is
    covered whole and the interpreter bound back into it; the others are covered, except the
    system's folders and the staged probe code (bound back into the view's own /tmp)."""
    keep = [staging.resolve(), *(Path("/") / name for name in (*SYSTEM_DIRS, "proc", "dev", "sys", "tmp"))]
    resolved = sorted({p.resolve() for p in hidden if p.is_dir()})
    covers = [p for p in resolved if any(p in r.parents for r in roots) and not _holds(p, keep)]
    rest = [p for p in hide_targets([p for p in resolved if p not in covers], roots + keep) if not _holds(p, keep)]
    return json.dumps(
        {
            "roots": [str(r) for r in roots],
            "covers": [str(p) for p in covers],
            "hidden": [str(p) for p in rest],
            "keep": [str(staging.resolve())],
            "tmp_bytes": TMPFS_BYTES,
        }
    )


def _holds(path: Path, keep: list[Path]) -> bool:
    return any(k == path or path in k.parents for k in keep)


def worker_command(
    kit: Path,
    uid: int,
    result_fd: int,
    flavour: str,
    bwrap: list[str] | None,
    view: str = "",
    forks: int = 0,
    memory_group: tuple[int, int] | None = None,
) -> list[str]:
    """The whole command line of a warm worker: inside `bwrap` (its part from `bwrap_command`), or
    directly when bubblewrap is unavailable (in a private view of the host, `view`, if given);
    `forks`: the submissions it will grade, when known (0: not known); `memory_group`: the
    descriptors of its slot's memory group (cgroup.procs, events; see `memory`), if any."""
    python = [interpreter(), "-E", "-s", "-B", "-c", BOOT]
    arguments = ["--uid", str(uid), "--result-fd", str(result_fd), "--flavour", flavour, "--forks", str(forks)]
    if memory_group is not None:
        arguments += ["--memory-group", ",".join(map(str, memory_group))]
    if bwrap is None:
        return python + [str(kit), *arguments, *(["--private-view", view] if view else [])]
    return bwrap + python + ["/tmp/kit", *arguments, "--pid-namespace"]


def interpreter() -> str:
    """This interpreter at a path the sandbox shows: its folder resolved (bubblewrap mounts the
    interpreter's folders by their real paths, `python_roots`, so a venv reached through a
    symbolic link is not where the workers find it), its own name kept (a venv's `python` is a
    link to the base interpreter: run by the venv's path, it still finds the venv's packages)."""
    folder, name = os.path.split(sys.executable)
    return os.path.join(os.path.realpath(folder), name)


def has_sys_admin() -> bool:
    """Whether this process may make a mount namespace (CAP_SYS_ADMIN among its effective capabilities)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> 21 & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def git_folders(checkout: Path) -> list[Path]:
    """The checkout's git folder, where every version of the answer key is: for a worktree (whose
    .git is a file naming its folder inside the main repository's), the main repository's too."""
    dot_git = checkout / ".git"
    if not dot_git.is_file():
        return [dot_git]
    try:
        text = dot_git.read_text(errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    own = (checkout / text.removeprefix("gitdir:").strip()).resolve()
    common = own / "commondir"
    shared = (own / common.read_text().strip()).resolve() if common.is_file() else own
    return [own, shared]
