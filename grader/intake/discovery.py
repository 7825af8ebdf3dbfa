"""Finding submissions on disk and reading them into `Submission` records."""
from __future__ import annotations

import hashlib
from pathlib import Path

from grader.intake.notebooks import NotebookError, modules_from_notebook
from grader.records import MODULES, IntegrityNote, Submission

MAX_SOURCE_BYTES = 512 * 1024


class DiscoveryError(Exception):
    """PATH holds no submission at all: the grader cannot run. Carries a message-catalogue key."""

    def __init__(self, key: str, **params: object):
        super().__init__(key)
        self.key = key
        self.params = params


def holds_submission(path: Path) -> bool:
    """Modules (.py or module-named notebooks) directly in PATH; or, failing that, a notebook in
    PATH (one for the whole chapter) and no student folders beside it."""
    if any((path / f"{module}.py").is_file() or (path / f"{module}.ipynb").is_file() for module in MODULES):
        return True
    if not any(path.glob("*.ipynb")):
        return False
    return not any(child.is_dir() and not child.name.startswith(".") and _holds_files(child)
                   for child in path.iterdir())


def _holds_files(path: Path) -> bool:
    return any(path.glob("*.py")) or any(path.glob("*.ipynb"))


def find_submissions(path: Path) -> tuple[list[Path], bool]:
    """(submission directories, is_class). One submission when PATH holds modules itself."""
    if not path.exists():
        raise DiscoveryError("discovery.missing", path=path)
    if not path.is_dir():
        raise DiscoveryError("discovery.not-a-directory", path=path)
    if holds_submission(path):
        return [path], False
    students = sorted(child for child in path.iterdir() if child.is_dir() and not child.name.startswith("."))
    if not students:
        raise DiscoveryError("discovery.empty", path=path)
    return students, True


def read_submission(path: Path, name: str | None = None) -> Submission:
    """Sources of the seven modules, from .py files or, where there is none, notebooks."""
    sources: dict[str, str] = {}
    problems: list[IntegrityNote] = []
    # Module-named notebooks first: they win over a chapter notebook defining the same module.
    for notebook in sorted(path.glob("*.ipynb"), key=lambda p: (p.stem not in MODULES, p.name)):
        if notebook.name.startswith(".") or not notebook.is_file():
            continue
        try:
            for module, source in modules_from_notebook(notebook).items():
                sources.setdefault(module, source)
        except NotebookError as exc:
            detail = notebook.name + (f" ({exc.where})" if exc.where else "")
            problems.append(IntegrityNote(f"submission.notebook-{exc.reason}", detail))
    for module in MODULES:
        file = path / f"{module}.py"
        if file.is_file():
            data = file.read_bytes()[:MAX_SOURCE_BYTES]
            sources[module] = data.decode("utf-8", errors="replace")
    digest = hashlib.sha256()
    for module in sorted(sources):
        digest.update(module.encode() + b"\0" + sources[module].encode() + b"\0")
    return Submission(name or path.name, path, sources, digest.hexdigest(), tuple(problems))
