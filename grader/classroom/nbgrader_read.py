"""Reading a submitted notebook for ``nbgrader autograde`` by the kit's rules.

`ReadSubmittedNotebook` is the exporter of autograde's passes (the course's config sets it): it
reads the file by the kit's intake rules (a regular file, no link, size and structure capped; no
link between nbgrader's submitted/ folder and the file: a student's folder that links elsewhere is
not read). A
notebook that nbformat reads and validates is nbformat's, unchanged; one that it cannot read or
validate (a cell's metadata a list, a source a number, a future nbformat...) is rebuilt from the
cells the kit's intake reads in it; one the intake cannot read either (not JSON, too large, a
folder, a link) becomes a notebook without cells, graded as the kit reads the file (see
`GradeWithKit`). What reading repaired goes to the pass's resources, for `RepairNbgraderMetadata`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from grader.classroom.nbgrader_files import step_folder
from grader.classroom.nbgrader_repair import READ_REPAIRS, REBUILT, UNREADABLE, Repair, cell_source
from grader.intake.files import Refused, read_below
from grader.intake.notebooks import MAX_NOTEBOOK_BYTES, NotebookError, parse_notebook

KEPT_METADATA = ("nbgrader", "attention_kit", "tags")  # what a rebuilt cell keeps of its metadata
CELL_TYPES = ("code", "markdown", "raw")


def _rebuilt(cells: list[dict]) -> Any:
    """A valid notebook of the cells the kit's intake read (their sources and the metadata it uses)."""
    import nbformat

    made = []
    for cell in cells:
        metadata = cell.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        kept = {key: metadata[key] for key in KEPT_METADATA if key in metadata}
        if not isinstance(kept.get("attention_kit"), dict):
            kept.pop("attention_kit", None)
        if not (isinstance(kept.get("tags"), list) and all(isinstance(t, str) for t in kept["tags"])):
            kept.pop("tags", None)
        else:
            kept["tags"] = list(dict.fromkeys(kept["tags"]))  # nbformat: unique tags
        kind = cell.get("cell_type")
        if kind not in CELL_TYPES:
            kind = "raw"
        make = {
            "code": nbformat.v4.new_code_cell,
            "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell,
        }[kind]
        made.append(make(source=cell_source(cell).replace("\r\n", "\n").replace("\r", "\n"), metadata=kept))
    return nbformat.v4.new_notebook(cells=made)


def _nbformat_notebook(raw: bytes) -> Any:
    """The notebook as nbformat reads it (version 4), or None when it does not read or validate."""
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.convert(nbformat.reader.reads(raw.decode("utf-8")), 4)
            nbformat.validate(notebook)
        return notebook
    except Exception:  # noqa: BLE001 - whatever nbformat rejects is read the kit's way
        return None


def read_submitted(path: Path, root: Path | None = None) -> tuple[Any, list[Repair]]:
    """The submitted notebook at `path` for nbgrader, and what reading it had to repair. With `root`
    (the folder of nbgrader's step: submitted/, autograded/), no link below it is followed: a
    student's folder that is a link (to a classmate's, to the course's source) is not read."""
    import nbformat

    try:
        raw = read_below(root, Path(path), MAX_NOTEBOOK_BYTES)
        cells = parse_notebook(raw)["cells"]  # the kit's size and structure caps, first
    except Refused as exc:
        return nbformat.v4.new_notebook(), [Repair(UNREADABLE, detail=exc.reason)]
    except NotebookError as exc:
        return nbformat.v4.new_notebook(), [Repair(UNREADABLE, detail=str(exc))]
    notebook = _nbformat_notebook(raw)
    if notebook is not None:
        return notebook, []
    return _rebuilt(cells), [Repair(REBUILT)]


def _step_root(converter: Any) -> Path | None:
    """The folder of the nbgrader step a converter reads from (submitted/, autograded/), if known."""
    try:
        return step_folder(converter.coursedir, converter._input_directory)
    except Exception:  # noqa: BLE001 - no converter (the exporter used alone): the file's folder is trusted
        return None


try:
    from nbconvert.exporters import NotebookExporter
except ImportError:  # nbgrader (and with it nbconvert) is an optional extra
    pass
else:

    class ReadSubmittedNotebook(NotebookExporter):
        """nbgrader's notebook exporter, reading the file by the kit's rules (see the module)."""

        def from_filename(self, filename, resources=None, **kw):
            from nbconvert.exporters.exporter import ResourcesDict

            resources = ResourcesDict() if resources is None else resources
            if not resources.get("metadata"):
                resources["metadata"] = ResourcesDict()
            folder, basename = os.path.split(filename)
            resources["metadata"]["name"] = os.path.splitext(basename)[0]
            resources["metadata"]["path"] = folder
            notebook, repairs = read_submitted(Path(filename), _step_root(self.parent))
            resources[READ_REPAIRS] = repairs
            return self.from_notebook_node(notebook, resources=resources, **kw)
