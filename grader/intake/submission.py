"""Assembling a `Submission` from the files read (by `grader.intake.files`' rules), within budgets.

A submission's files are read one at a time and each notebook is turned into module sources at
once, so that at most one file's raw bytes are held. The budgets bound what one submission costs
the trusted process whatever it holds: MAX_SOURCE_BYTES per module (a .py file, or the code a
notebook gives a module), MAX_NOTEBOOK_BYTES per notebook, MAX_NOTEBOOKS notebooks and
MAX_SUBMISSION_BYTES read in all. What is over a budget is not graded, and a note says so.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from grader.intake.chapter import Defined
from grader.intake.contract import ALL_NAMES
from grader.intake.near_misses import Search, search
from grader.intake.notebooks import MAX_NOTEBOOK_BYTES, NotebookCode, NotebookError, notebook_code
from grader.intake.printable import decode_name, printable
from grader.intake.source_text import read_source
from grader.records import MODULES, Intake, IntegrityNote, LineOrigin, LmsIdentity, ModuleFound, Submission

MAX_SOURCE_BYTES = 512 * 1024
MAX_NOTEBOOKS = 16
MAX_SUBMISSION_BYTES = 24 * 1024 * 1024
MAX_LISTED_CELLS = 10  # cell numbers a note lists
MAX_LISTED_NAMES = 12  # names a note lists


def is_module_file(name: str) -> bool:
    stem, dot, suffix = name.rpartition(".")
    return bool(dot) and suffix in ("py", "ipynb") and stem in MODULES


def reading_order(names: list[str]) -> list[str]:
    """The files of a submission that are read, in the order they are: the modules' .py files,
    then notebooks named like a module, then other notebooks (by name)."""
    modules = [f"{m}.py" for m in MODULES if f"{m}.py" in names]
    notebooks = sorted(
        (n for n in names if n.endswith(".ipynb") and not n.startswith(".")),
        key=lambda n: (n[:-6] not in MODULES, os.fsencode(n)),
    )
    return modules + notebooks


class Assembly:
    """A submission being put together, file by file."""

    def __init__(
        self,
        name: str,
        path: Path,
        problems: list[IntegrityNote] | tuple[IntegrityNote, ...] = (),
        near_misses: bool = True,
    ):
        self.name = name
        self.path = Path(path)
        self.py: dict[str, str] = {}
        self.generated: dict[str, tuple[str, tuple[tuple[int, LineOrigin | None], ...]]] = {}
        self.problems = list(problems)
        self.left = MAX_SUBMISSION_BYTES
        self.notebooks = 0
        self.found: dict[str, ModuleFound] = {}
        self.definitions: list[tuple[str, Defined]] = []  # (notebook, a function or class it defines)
        self.remarks: list[IntegrityNote] = []
        self.identity: LmsIdentity | None = None
        self.notebooks_read: list[str] = []
        # False: a first look (names, content, track) that does not parse the code for misspelt names
        self.looks_for_near_misses = near_misses

    def note(self, kind: str, filename: str) -> None:
        self.problems.append(IntegrityNote(kind, decode_name(filename)))

    def admits(self, filename: str, size: int) -> bool:
        """Whether a file of `size` bytes is read (a note says why not)."""
        if filename.endswith(".ipynb") and self.notebooks >= MAX_NOTEBOOKS:
            self.note("submission.notebook-skipped", filename)
            return False
        if size > self.left:
            self.note("submission.file-over-budget", filename)
            return False
        return True

    def add(self, filename: str, data: bytes) -> None:
        self.left -= len(data)
        if filename.endswith(".ipynb"):
            self.notebooks += 1
            self._notebook(filename, data)
        elif is_module_file(filename):
            source = read_source(data)
            if source.ignored:
                self.problems.append(
                    IntegrityNote(
                        "submission.encoding-not-read",
                        f"{decode_name(filename)} ({printable(source.declared, limit=40)})",
                    )
                )
            self.py[filename[:-3]] = source.text
            self.found[filename[:-3]] = ModuleFound(filename[:-3], decode_name(filename), "file")

    def _notebook(self, filename: str, data: bytes) -> None:
        shown_name = decode_name(filename)
        self.notebooks_read.append(shown_name)
        try:
            code = notebook_code(data, filename, shown_name, frozenset(self.py) | frozenset(self.generated))
        except NotebookError as exc:
            detail = shown_name + (f" ({exc.where})" if exc.where else "")
            self.problems.append(IntegrityNote(f"submission.notebook-{exc.reason}", detail))
            return
        if code.test_cells:
            detail = f"{shown_name} ({_listed(code.test_cells)})"
            self.problems.append(IntegrityNote("submission.notebook-test-cells", detail))
        if code.unread_cells:
            detail = f"{shown_name} ({_listed(code.unread_cells)})"
            self.problems.append(IntegrityNote("submission.notebook-cells-not-read", detail))
        self.definitions += [(shown_name, d) for d in code.definitions]
        named_like_a_module = filename[: -len(".ipynb")] in MODULES
        if not named_like_a_module and not code.modules and not any(d.name in ALL_NAMES for d in code.definitions):
            self.problems.append(_nothing_found(shown_name, code.definitions))
        self.remarks += _defined_again(shown_name, code)
        for module, generated in code.modules.items():
            if module in self.generated:
                continue  # an earlier notebook (a module-named one) has it
            if len(generated.source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
                self.problems.append(IntegrityNote("submission.notebook-code-too-large", f"{module} ({shown_name})"))
                continue
            self.generated[module] = (generated.source, generated.origins)
            self.found.setdefault(
                module, ModuleFound(module, shown_name, generated.how, generated.cells, generated.names)
            )

    def submission(self) -> Submission:
        sources = {module: source for module, (source, _) in self.generated.items()}
        origins = {module: runs for module, (_, runs) in self.generated.items()}
        for module, source in self.py.items():  # a .py file wins over a notebook
            sources[module] = source
            origins.pop(module, None)
        ordered = {module: sources[module] for module in MODULES if module in sources}
        misses = search(ordered, origins, self.definitions) if self.looks_for_near_misses else Search(())
        problems = self.problems + [IntegrityNote("submission.names-not-compared", f) for f in misses.uncompared]
        digest = hashlib.sha256()
        for module in sorted(sources):
            digest.update(module.encode() + b"\0" + sources[module].encode("utf-8", "surrogatepass") + b"\0")
        for note in self.problems + self.remarks:  # what a first look reads too (no near-miss search)
            digest.update(b"note\0" + f"{note.kind}\0{note.detail}".encode("utf-8", "surrogatepass") + b"\0")
        if self.identity is not None:
            digest.update(b"identity\0" + repr(self.identity).encode("utf-8", "surrogatepass"))
        intake = Intake(
            tuple(self.found[m] for m in MODULES if m in ordered),
            misses.found,
            tuple(self.remarks),
            self.identity,
            tuple(self.notebooks_read),
        )
        return Submission(self.name, self.path, ordered, digest.hexdigest(), tuple(problems), origins, intake)


def _defined_again(notebook: str, code: NotebookCode) -> list[IntegrityNote]:
    """A required name a notebook defines in more than one cell, of a module recognised by its
    names: the checks ran its last definition (as Run All leaves it), and the note says which."""
    recognised = {
        name for generated in code.modules.values() if generated.how == "recognised" for name in generated.names
    }
    cells: dict[str, list[int]] = {}
    for defined in code.definitions:
        if defined.name in recognised and defined.cell not in cells.setdefault(defined.name, []):
            cells[defined.name].append(defined.cell)
    return [
        IntegrityNote("defined-again", f"{name} in {notebook} ({_listed(tuple(numbers))})")
        for name, numbers in cells.items()
        if len(numbers) > 1
    ]


def _nothing_found(notebook: str, definitions: tuple[Defined, ...]) -> IntegrityNote:
    """A notebook none of whose cells gives a module: what it defines, for the note."""
    names = list(dict.fromkeys(d.name for d in definitions))
    if not names:
        return IntegrityNote("submission.notebook-defines-nothing", notebook)
    listed = ", ".join(names[:MAX_LISTED_NAMES]) + (", …" if len(names) > MAX_LISTED_NAMES else "")
    return IntegrityNote("submission.notebook-nothing-found", f"{notebook} ({listed})")


def _listed(numbers: tuple[int, ...]) -> str:
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED_CELLS])
    return shown + (", …" if len(numbers) > MAX_LISTED_CELLS else "")


def submission_from_files(
    name: str, path: Path, files: dict[str, bytes], problems: list[IntegrityNote] | tuple[IntegrityNote, ...] = ()
) -> Submission:
    """A Submission from file names and contents already read (by intake's rules): .py files named
    like a module and notebooks (*.ipynb), within the budgets above; other names are ignored."""
    assembly = Assembly(name, path, problems)
    for filename in reading_order(list(files)):
        if assembly.admits(filename, len(files[filename])):
            assembly.add(filename, files[filename])
    return assembly.submission()


__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "MAX_NOTEBOOKS",
    "MAX_SOURCE_BYTES",
    "MAX_SUBMISSION_BYTES",
    "Assembly",
    "is_module_file",
    "reading_order",
    "submission_from_files",
]
