"""Notebook submissions: the code a notebook defines, as module sources."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from grader.records import MODULES

CHAPTER_NOTEBOOK_MARKER = re.compile(r"^#\s*module:\s*(\w+)\s*$", re.MULTILINE)


class NotebookError(Exception):
    pass


def _code(cell_source: str) -> str:
    """Cell code with IPython magics and shell escapes commented out."""
    lines = []
    for line in cell_source.splitlines():
        stripped = line.lstrip()
        lines.append("# " + line if stripped.startswith(("%", "!")) else line)
    return "\n".join(lines)


def modules_from_notebook(path: Path) -> dict[str, str]:
    """A notebook named after a module defines that module; any other notebook (one for the whole
    chapter) assigns each code cell to the module named by a `# module: <name>` first line."""
    try:
        notebook = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds
        raise NotebookError(str(exc)[:300]) from None
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    if path.stem in MODULES:
        return {path.stem: "\n\n".join(_code(cell) for cell in cells) + "\n"}
    modules: dict[str, list[str]] = {}
    for cell in cells:
        match = CHAPTER_NOTEBOOK_MARKER.match(cell.lstrip())
        if match and match.group(1) in MODULES:
            modules.setdefault(match.group(1), []).append(_code(cell))
    return {module: "\n\n".join(parts) + "\n" for module, parts in modules.items()}
