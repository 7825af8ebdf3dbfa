"""One student's damaged or forged nbgrader data costs only that notebook in ``nbgrader autograde``.

nbgrader trusts the nbgrader metadata of a submitted notebook, and some of its failures stop the
whole class: a test cell copy-pasted in Jupyter keeps its metadata, ``DeduplicateIds`` empties the
copy's, then ``CheckCellMetadata`` raises ``SchemaTooOldError`` and ``nbgrader autograde`` exits
for everyone after that notebook. Others (a notebook nbformat cannot read, a ``nbgrader`` key that
is a string, an id the gradebook does not know) fail that student with an error and the run exits 1.

The course's config (templates/nbgrader/nbgrader_config.py.j2) guards autograde's *sanitize* pass,
the one nbgrader runs on the notebook as submitted. Its exporter reads the file by the kit's rules
(`grader.classroom.nbgrader_read`), and `RepairNbgraderMetadata`, first of its preprocessors, makes
every cell's nbgrader metadata the course's, taken from the gradebook (the source notebook), never
from the student's copy:

* the first cell that claims a course cell's id becomes that cell: its metadata, its type and, for
  a locked cell, its content are the course's (as nbgrader's OverwriteCells would make them);
* a later cell that claims the same id is a copy: it loses the marking;
* a cell that lost its metadata but holds exactly a locked course cell's content, while no cell
  claims that id, is recognised as that cell (a test cell whose metadata Jupyter or an editor
  dropped, which the kit would otherwise read as code);
* any other nbgrader metadata (an unknown id, a string, a list, no id) is removed: the cell is read
  as any cell, and is worth nothing of its own (metadata that marked the cell as nothing goes
  without a note).

After it nbgrader's own steps (DeduplicateIds, OverwriteCells, CheckCellMetadata) find nothing to
reject, and the notebook is graded by `GradeWithKit` from its code.

Each repair is a `Repair` record, kept in this process for `GradeWithKit` (the autograde pass of
the same notebook), which shows them in the notebook's feedback: never read back from the
notebook, so a student cannot forge one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Repair kinds, each a catalogue message classroom.nbgrader.repair.<kind>.
COPY, RESTORED, RECOGNISED, REMOVED, REBUILT, UNREADABLE = (
    "copy",
    "restored",
    "recognised",
    "removed",
    "rebuilt",
    "unreadable",
)
READ_REPAIRS = "attention_kit_read"  # the exporter's repairs, in the pass's resources


@dataclass(frozen=True)
class Repair:
    """What was repaired in a submitted notebook. `cell`: the cell's number (1-based, as submitted);
    `grade_id`: the course's id it concerns (never a string of the student's); `detail`: language-
    neutral (the fields that differed, the number of the original cell, why a file was unreadable)."""

    kind: str
    cell: int = 0
    grade_id: str = ""
    detail: str = ""


@dataclass(frozen=True)
class CourseCell:
    """A cell of the course's source notebook, as the gradebook holds it."""

    name: str
    cell_type: str
    locked: bool
    source: str
    checksum: str | None = None
    grade: bool = False
    solution: bool = False
    task: bool = False
    points: float | None = None

    def metadata(self) -> dict[str, Any]:
        """The nbgrader metadata of this cell in a released notebook."""
        meta: dict[str, Any] = {
            "cell_type": self.cell_type,
            "grade": self.grade,
            "grade_id": self.name,
            "locked": self.locked,
            "schema_version": 3,
            "solution": self.solution,
            "task": self.task,
        }
        if self.checksum:
            meta["checksum"] = self.checksum
        if self.grade or self.task:
            meta["points"] = float(self.points or 0.0)
        return meta


def course_cells(db_url: str, notebook: str, assignment: str) -> dict[str, CourseCell]:
    """The source notebook's cells, by id; {} when the gradebook does not know the notebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        try:
            source = gradebook.find_notebook(notebook, assignment)
        except MissingEntry:
            return {}
        grades = {cell.name: float(cell.max_score) for cell in source.grade_cells}
        tasks = {cell.name: float(cell.max_score) for cell in source.task_cells}
        solutions = {cell.name for cell in source.solution_cells}
        return {
            cell.name: CourseCell(
                cell.name,
                cell.cell_type,
                bool(cell.locked),
                cell.source or "",
                cell.checksum,
                grade=cell.name in grades,
                solution=cell.name in solutions,
                task=cell.name in tasks,
                points=grades.get(cell.name, tasks.get(cell.name)),
            )
            for cell in source.source_cells
        }


# ------------------------------------------------------------------------------------------------
# The repair itself (plain data: testable without nbgrader)
# ------------------------------------------------------------------------------------------------


def cell_source(cell: Any) -> str:
    source = cell.get("source", "")
    return (
        "".join(part for part in source if isinstance(part, str))
        if isinstance(source, list)
        else source
        if isinstance(source, str)
        else ""
    )


def _claim(cell: Any, course: dict[str, CourseCell]) -> str | None:
    """The course cell this cell's nbgrader metadata names, if it names one."""
    meta = cell["metadata"].get("nbgrader")
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) and grade_id in course else None


def _same(value: Any, expected: Any) -> bool:
    if isinstance(expected, bool):
        return value is expected
    if isinstance(expected, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == expected
    return type(value) is type(expected) and value == expected


def _differences(cell: Any, expected: CourseCell) -> list[str]:
    """Which of the cell's nbgrader fields, type or (locked cell) content differ from the course's,
    by name ("…" for keys nbgrader does not know: their names are the student's text, not shown)."""
    meta = cell["metadata"].get("nbgrader")
    if not isinstance(meta, dict):
        return ["nbgrader"]
    canonical = expected.metadata()
    fields = {key for key in canonical if key not in meta or not _same(meta[key], canonical[key])}
    if cell.get("cell_type") != expected.cell_type:
        fields.add("cell_type")
    if expected.locked and cell_source(cell) != expected.source:
        fields.add("source")
    return sorted(fields) + (["…"] if any(key not in canonical for key in meta) else [])


def _become(cell: Any, expected: CourseCell) -> None:
    """Make the cell the course's cell: its metadata, its type and, when locked, its content."""
    from nbformat import from_dict

    cell["metadata"]["nbgrader"] = from_dict(expected.metadata())  # nbgrader reads it as attributes
    if cell.get("cell_type") != expected.cell_type:
        cell["cell_type"] = expected.cell_type
        for key in ("outputs", "execution_count", "attachments"):
            cell.pop(key, None)
        if expected.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
    if expected.locked:
        cell["source"] = expected.source


def _recognisable(course: dict[str, CourseCell], claimed: set[str]) -> dict[tuple[str, str], str]:
    """(type, content) -> id of the locked course cells no cell claims (their content is the course's)."""
    found: dict[tuple[str, str], str] = {}
    for name, cell in course.items():
        if cell.locked and name not in claimed and cell.source.strip():
            found.setdefault((cell.cell_type, cell.source), name)
    return found


def repair_cells(cells: list, course: dict[str, CourseCell]) -> list[Repair]:
    """Make the cells' nbgrader metadata the course's (in place); returns what was repaired."""
    claims = [_claim(cell, course) for cell in cells]
    recognisable = _recognisable(course, {name for name in claims if name})
    taken: dict[str, int] = {}
    repairs: list[Repair] = []
    for number, (cell, name) in enumerate(zip(cells, claims), start=1):
        if name is None:
            name = recognisable.pop((cell.get("cell_type"), cell_source(cell)), None)
            if name is not None:
                taken[name] = number
                _become(cell, course[name])
                repairs.append(Repair(RECOGNISED, number, name))
                continue
        if name is not None and name not in taken:
            taken[name] = number
            fields = _differences(cell, course[name])
            _become(cell, course[name])
            if fields:
                repairs.append(Repair(RESTORED, number, name, ", ".join(fields)))
        elif name is not None:
            del cell["metadata"]["nbgrader"]
            repairs.append(Repair(COPY, number, name, str(taken[name])))
        elif "nbgrader" in cell["metadata"] and _marks(cell["metadata"].pop("nbgrader")):
            repairs.append(Repair(REMOVED, number))
    return repairs


def _marks(meta: Any) -> bool:
    """Whether nbgrader metadata marks its cell as anything (metadata that marks nothing, such as
    {} or all flags false, goes without a word: the cell was and stays an ordinary cell)."""
    return not isinstance(meta, dict) or any(meta.get(flag) for flag in ("grade", "solution", "locked", "task"))


def strip_all(cells: list) -> list[Repair]:
    """The last resort when a repair failed: no cell keeps nbgrader metadata."""
    repairs = []
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell.get("metadata"), dict) and cell["metadata"].pop("nbgrader", None) is not None:
            repairs.append(Repair(REMOVED, number))
    return repairs


# ------------------------------------------------------------------------------------------------
# nbgrader's side: the sanitize pass's first preprocessor
# ------------------------------------------------------------------------------------------------

_REPAIRS: dict[tuple[str, str, str], list[Repair]] = {}


def _key(info: dict) -> tuple[str, str, str]:
    return (str(info.get("assignment")), str(info.get("student")), str(info.get("notebook")))


def repairs_of(info: dict) -> list[Repair]:
    """What the sanitize pass repaired in this notebook (`info`: resources["nbgrader"])."""
    return list(_REPAIRS.get(_key(info), []))


try:
    from nbgrader.preprocessors import NbGraderPreprocessor as _Preprocessor
except ImportError:  # nbgrader is an optional extra
    _Preprocessor = object


if _Preprocessor is not object:

    class RepairNbgraderMetadata(_Preprocessor):
        """Makes a submitted notebook's nbgrader metadata the course's (see the module)."""

        def preprocess(self, nb, resources):
            info = resources.get("nbgrader", {})
            repairs = list(resources.get(READ_REPAIRS, []))
            try:
                course = course_cells(info["db_url"], info["notebook"], info["assignment"])
            except Exception as exc:  # noqa: BLE001 - nbgrader's own steps will say what is wrong
                self.log.error("attention-kit could not read the course's notebook from the gradebook: %s", exc)
                course = None
            if course is not None:
                try:
                    repairs += repair_cells(nb.cells, course)
                except Exception as exc:  # noqa: BLE001 - never stop the class over one notebook
                    self.log.error(
                        "attention-kit could not repair %s's notebook (%s); its nbgrader metadata is removed",
                        info.get("student"),
                        exc,
                    )
                    repairs += strip_all(nb.cells)
            _REPAIRS[_key(info)] = repairs
            for repair in repairs:
                self.log.warning("attention-kit repaired %s's notebook: %s", info.get("student"), repair)
            return nb, resources
