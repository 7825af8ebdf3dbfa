"""Typed records that flow one way through the grader: submission -> probe results -> outcomes -> report.

Every record is immutable once made: a stage that changes one returns a new record (dataclasses.replace)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The seven student modules, in grading order, and the section each belongs to: from the manifest
# (grader/sections.py), here where every stage reads them.
from grader.sections import MODULE_SECTIONS as MODULE_SECTIONS
from grader.sections import MODULES as MODULES

SECTIONS: tuple[str, ...] = tuple(MODULE_SECTIONS.values())


@dataclass(frozen=True)
class LineOrigin:
    """Where a line of a module made from a notebook was written: the notebook (as feedback names
    it), the code cell's number (1-based, among the notebook's code cells: markdown cells are not
    counted) and the line in that cell (1-based)."""

    notebook: str
    cell: int
    line: int


@dataclass(frozen=True)
class ModuleFound:
    """Where a module's code was found: `file` (as the student named it), and `how`: "file" (a .py
    file), "notebook" (every code cell of a notebook named like the module), "marked" (its
    `# module:` cells of a notebook) or "recognised" (by the names it defines: `names`, in `cells`)."""

    module: str
    file: str
    how: str
    cells: tuple[int, ...] = ()
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class NearMiss:
    """A name the contract requires that is missing, where one that looks like it is defined:
    `kind` "name" (a function or class of the module), "method" (of the class `owner`: its
    `__init__` or `forward`) or "keyword" (a parameter of `owner`'s constructor or function).
    `found` is the student's name; `file`, `line` (and a notebook's code `cell`) say where it is."""

    module: str
    kind: str
    wanted: str
    found: str
    file: str
    line: int
    cell: int = 0
    owner: str = ""


@dataclass(frozen=True)
class LmsIdentity:
    """Who a submission of an LMS download is, as the LMS knows them: `lms` names its format in
    `grader.lms` ("canvas", "moodle", "blackboard", "brightspace"), `user_id` the id the LMS's part of
    the download's names carries, `name` the name it writes there; `late` when the LMS marked it late."""

    lms: str
    user_id: str
    name: str
    late: bool = False


@dataclass(frozen=True)
class Intake:
    """How a submission's code was found: each module's file or cells, the names that look misspelt,
    what was noticed on the way (a file uploaded again: `remarks`), the LMS's identity of the student."""

    modules: tuple[ModuleFound, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    remarks: tuple[IntegrityNote, ...] = ()
    identity: LmsIdentity | None = None
    notebooks: tuple[str, ...] = ()  # the notebooks read (as the student named them)


@dataclass(frozen=True)
class Submission:
    """One student's work: module name -> Python source (notebooks already converted)."""

    name: str
    path: Path
    sources: dict[str, str]
    content_hash: str
    problems: tuple[IntegrityNote, ...] = ()  # e.g. an unreadable notebook, a refused link
    # module -> where the lines of its source came from, for modules made from notebooks, as runs
    # (first line of the run, its LineOrigin or None for lines the grader added); look a line up
    # with grader.intake.notebook_cells.origin_at. Modules from .py files have no entry.
    origins: dict[str, tuple[tuple[int, LineOrigin | None], ...]] = field(default_factory=dict)
    intake: Intake = field(default_factory=lambda: Intake())


@dataclass(frozen=True)
class StudentFrame:
    """One frame of a traceback inside the student's own files."""

    file: str
    line: int
    function: str
    code: str
    cell: int = 0  # in a notebook submission: the cell's number (file is the notebook, line the line in the cell)


@dataclass(frozen=True)
class ProbeError:
    """Why a probe produced no outputs, in terms of the student's code.

    kind: import | exception | contract | timeout | crash | resource | exit | integrity
    """

    kind: str
    exc_type: str = ""
    message: str = ""
    module: str = ""  # the student module the error happened in (may differ from the probed one)
    frames: tuple[StudentFrame, ...] = ()
    key: str = ""  # message-catalogue key for contract errors raised by the kit itself
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def location(self) -> StudentFrame | None:
        return self.frames[-1] if self.frames else None


@dataclass(frozen=True)
class IntegrityNote:
    """Something the grader noticed about isolation or tampering; shown in reports and the gradebook."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Detail:
    """A structured explanation of a failed comparison, rendered by templates."""

    key: str  # message-catalogue key, e.g. "mismatch.values"
    params: dict[str, Any] = field(default_factory=dict)
    expected: Any = None  # small nested lists (for tables), or None
    actual: Any = None
    differs: Any = None  # nested lists of bools marking differing entries


@dataclass(frozen=True)
class Diagnosis:
    """Why a test failed, in the student's terms (see grader.diagnosis).

    misconceptions: the named causes, the main one first (it is also `TestOutcome.misconception`);
    checkpoint: the step of the chapter's pipeline where the student's computation first departs
    from the reference ("scores", "weights", "merged"...), when known;
    location: the student's line there;
    evidence: how it was found: "error" (the exception), "variant" (the outputs are a known buggy
    variant's), "trace" (the student's own intermediate values), "behaviour" (a signature such as
    NaN rows or two different eval outputs), "construction" (the constructor's parameters)."""

    misconceptions: tuple[str, ...] = ()
    checkpoint: str | None = None
    location: StudentFrame | None = None
    evidence: str = ""


@dataclass(frozen=True)
class TestOutcome:
    id: str  # "<module>::<test>"
    module: str
    name: str
    section: str
    status: str
    points: float
    max_points: float
    message: str = ""
    detail: Detail | None = None
    error: ProbeError | None = None
    misconception: str | None = None
    blocked_by: str | None = None  # a broken module this test depends on, e.g. "sec3_5_causal_attention"
    probes: tuple[str, ...] = ()
    diagnosis: Diagnosis | None = None
    near_miss: NearMiss | None = None  # a misspelt name that explains this test's error (grader.intake.near_misses)


@dataclass(frozen=True)
class SectionScore:
    id: str
    title: str
    score: float
    max_score: float


@dataclass(frozen=True)
class Heatmap:
    """Attention weights of the student and the reference on the book's six-token sentence."""

    test_id: str
    title_key: str
    tokens: list[str]
    expected: list[list[float]]
    actual: list[list[float]] | None


@dataclass(frozen=True)
class GradeResult:
    submission: str
    content_hash: str
    score: float
    max_score: float
    sections: list[SectionScore]
    tests: list[TestOutcome]
    integrity: list[IntegrityNote]
    heatmaps: list[Heatmap] = field(default_factory=list)
    track: str = "pytorch"  # or "mindspore" (grader.frameworks.track_of)
    folder: str | None = None  # in a class run, the folder of its reports (grader.intake.names)
    intake: Intake = field(default_factory=lambda: Intake())  # how its code was found
