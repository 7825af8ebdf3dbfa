"""Is the answer key out of reach of student code? The sandbox hides the kit with bubblewrap; where
bubblewrap cannot run, the children's own uid and the file permissions are what keep the reference
(solutions/), the hidden suites and the buggy variants (grader/) from them; and a kit installed
inside site-packages sits in a folder the sandbox mounts. Both the grader (`grade`, whose reports
say what is missing) and the platform deployments (Gradescope, PrairieLearn) ask here."""

from __future__ import annotations

import os
import site
import stat
import sysconfig
from pathlib import Path

from grader.records import IntegrityNote

ROOT = Path(__file__).resolve().parents[2]
ANSWER_KEY_PARTS = ("solutions", "grader")  # the reference; the hidden suites and the buggy variants


def answer_key_exposure(kit_root: Path = ROOT) -> list[IntegrityNote]:
    """What keeps the answer key (solutions, hidden suites, buggy variants) from student code, and
    what is missing: the kit inside site-packages (which the sandbox mounts), or any file of the kit
    readable by other users (the sandbox's uid) where bubblewrap cannot hide it."""
    notes = []
    kit_root = kit_root.resolve()
    if any(kit_root == p or p in kit_root.parents for p in _site_packages()):
        notes.append(IntegrityNote("deploy.kit-in-site-packages", str(kit_root)))
    readable = readable_by_others(kit_root)
    if readable is not None:
        notes.append(IntegrityNote("deploy.kit-readable", readable))
    return notes


def readable_by_others(root: Path) -> str | None:
    """A file of the answer key under ROOT (the reference in solutions/, the hidden suites and the buggy
    variants in grader/) whose content a user other than its owner and group can read: every folder
    on its path searchable by others and the file readable by others. None when there is none."""
    root = root.resolve()
    for above in (*reversed(root.parents), root):
        if not os.stat(above).st_mode & stat.S_IXOTH:
            return None
    readable: list[str] = []
    for part in ANSWER_KEY_PARTS:
        for folder, dirs, names in os.walk(root / part):
            dirs.sort()
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                dirs[:] = []
                continue
            for name in sorted(names):
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_mode & stat.S_IROTH:
                    readable.append(os.path.relpath(os.path.join(folder, name), root))
    # name the reference or a hidden suite when one of them is readable
    secret = [
        path
        for prefix in ("solutions", os.path.join("grader", "suites", "hidden"))
        for path in readable
        if path.startswith(prefix)
    ]
    found = secret or readable
    return found[0] if found else None


def _site_packages() -> list[Path]:
    paths = set(site.getsitepackages()) | {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    if site.ENABLE_USER_SITE:
        paths.add(site.getusersitepackages())
    return [Path(p).resolve() for p in paths if p and os.path.isdir(p)]
