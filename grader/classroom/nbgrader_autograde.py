"""nbgrader's autograde for Chapter 3, graded by the kit (the course itself: nbgrader_course.py).

Who runs student code. By default the course's config drops nbgrader's Execute preprocessor from
``nbgrader autograde``: student code then runs only in the kit's sandbox, never as the grading
user (``grade nbgrader --run-student-kernel`` keeps Execute, for feedback with the students' own
outputs, at the price of an unsandboxed kernel).

Who decides the score. A test cell's code runs in the student's own kernel, where the student can
replace any function, module or output. So in ``nbgrader autograde`` the score never comes from
the kernel. The course's config adds the `GradeWithKit` preprocessor (after Execute, when that
runs): in the trusted nbgrader process it grades the notebook's code through the kit's sandboxed
path (`grader.run.grade`, the same as ``grade`` on the command line) and *replaces* each test
cell's outputs with the kit's HTML feedback plus the section's points as the cell's value
(nbgrader's partial credit). A test cell's points are the gradebook's (the course's notebook),
never the student's copy's. In the kernel, under autograde, the test cell's public checks raise:
if the preprocessor is missing from the config, every test cell scores 0 (fail closed).

What students did to their notebook is graded, not punished twice: a test cell the student
deleted is put back (from the gradebook) and scored, so no section is left at "needs manual
grade"; a section whose solution cell is gone is explained in notebook terms (which cell is
missing and how to bring it back), not as a missing ``.py`` file. Damaged or forged nbgrader data
is repaired before nbgrader's own checks (nbgrader_repair.py); the first test cell's feedback says
what was repaired, and a file that is no notebook at all is graded as the kit reads it (0, and why).

The nbgrader traps this handles: ``IgnorePattern`` for torch's warnings on stderr (any stderr in a
test cell scores 0), points as the test cell's value only ever written by the preprocessor, and
``nbgrader validate`` exiting 0 on failure (check its output, not its exit status).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from grader.classroom.nbgrader_feedback import add_overview, number_code_cells, repair_text, test_outputs
from grader.classroom.nbgrader_files import step_folder, withheld_of, withheld_text
from grader.classroom.nbgrader_repair import UNREADABLE, course_cells, repairs_of
from grader.i18n import Catalog
from grader.intake.discovery import notebook_submission, read_submission, submission_from_files
from grader.records import MODULES, GradeResult
from grader.report.feedback import FeedbackView, feedback_view
from grader.run import grade, grade_submissions
from grader.sections import BOOK_ORDER

NOTEBOOK_NAME = "ch3_attention"
TEST_GRADE_ID = "test_{module}"


# ------------------------------------------------------------------------------------------------
# The trusted side: an nbgrader preprocessor
# ------------------------------------------------------------------------------------------------

try:
    from nbgrader.preprocessors import NbGraderPreprocessor as _Base
    from traitlets import Int, Unicode
except ImportError:  # nbgrader is an optional extra; the rest of this module works without it
    _Base = object


def _write_notebook(nb: Any, directory: Path, name: str) -> None:
    import nbformat

    directory.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(directory / f"{name}.ipynb"))


def grade_notebooks(
    notebooks: dict[str, Path], name: str, lang: str = "en", jobs: int = 1, root: Path | None = None
) -> dict[str, tuple[str, GradeResult]]:
    """Grade several students' copies of one notebook in a single run of the kit's path.
    Each notebook is read by intake's rules (no link, no special file, size capped; with ROOT,
    nbgrader's submitted/ folder, no link below it: a student's folder that links to another's
    is not read).

    Returns student -> (hash of the code graded, its grading: scores, diagnoses, heatmaps)."""
    submissions = [notebook_submission(student, notebook, root) for student, notebook in notebooks.items()]
    with tempfile.TemporaryDirectory(prefix="kit-nbgrader-") as scratch:
        summary = grade_submissions(submissions, Path(scratch) / "out", jobs=jobs, lang=lang, force=True)
        results = {result.submission: result for result in summary.results}
        return {
            student: (submission.content_hash, results[graded])
            for student, submission, graded in zip(notebooks, submissions, summary.names)
        }


def grade_notebook_document(nb: Any, name: str, lang: str = "en", jobs: int = 1) -> GradeResult:
    """Grade the code of one in-memory notebook through the kit's path."""
    with tempfile.TemporaryDirectory(prefix="kit-nbgrader-") as scratch:
        submission = Path(scratch) / "submission"
        _write_notebook(nb, submission, name)
        return grade(submission, Path(scratch) / "out", jobs=jobs, lang=lang, force=True).results[0]


def notebook_modules(nb: Any, name: str) -> set[str]:
    """The modules this notebook defines code for, read by the kit's intake rules."""
    with tempfile.TemporaryDirectory(prefix="kit-nbgrader-") as scratch:
        _write_notebook(nb, Path(scratch) / "s", name)
        return set(read_submission(Path(scratch) / "s").sources)


def restore_test_cells(nb: Any, db_url: str, notebook: str, assignment: str) -> set[str]:
    """Put back the kit's test cells a student deleted, as the gradebook holds them; returns their
    modules. Each goes after its section's solution cell (or after the cells of the sections
    before it, or at the end). Without it, nbgrader leaves a deleted cell's grade unscored."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    present = {_nbgrader_metadata(cell).get("grade_id") for cell in nb.cells}
    restored: set[str] = set()
    with Gradebook(db_url) as gradebook:
        try:
            source = gradebook.find_notebook(notebook, assignment)
        except MissingEntry:
            return restored
        source_cells = {cell.name: cell for cell in source.source_cells}
        for grade_cell in source.grade_cells:
            module = grade_cell.name.removeprefix("test_")
            if (
                module not in MODULES
                or grade_cell.name != TEST_GRADE_ID.format(module=module)
                or grade_cell.name in present
                or grade_cell.name not in source_cells
            ):
                continue
            original = source_cells[grade_cell.name]
            cell = nbformat.v4.new_code_cell(
                source=original.source,
                metadata={
                    "editable": False,
                    "deletable": False,
                    "nbgrader": {
                        "grade": True,
                        "solution": False,
                        "locked": True,
                        "task": False,
                        "schema_version": 3,
                        "grade_id": grade_cell.name,
                        "points": grade_cell.max_score,
                        "checksum": original.checksum,
                        "cell_type": "code",
                    },
                },
            )
            nb.cells.insert(_restore_position(nb.cells, module), cell)
            restored.add(module)
    return restored


def _restore_position(cells: list, module: str) -> int:
    """After the module's own cells, else after the last cell of an earlier section, else at the end."""
    order = BOOK_ORDER[: BOOK_ORDER.index(module) + 1]
    best = None
    for index, cell in enumerate(cells):
        grade_id = str(_nbgrader_metadata(cell).get("grade_id", ""))
        owner = grade_id.removeprefix("test_").removeprefix("intro_")
        if owner in order and (best is None or order.index(owner) >= best[0]):
            best = (order.index(owner), index)
    return best[1] + 1 if best else len(cells)


def _code_hash(nb: Any, name: str) -> str:
    import nbformat

    return submission_from_files(name, Path(name), {f"{name}.ipynb": nbformat.writes(nb).encode()}).content_hash


if _Base is not object:

    class GradeWithKit(_Base):
        """Scores the test cells of an executed notebook with the kit, ignoring what the kernel said."""

        lang = Unicode("en", help="Language of the feedback shown in test cells (en or zh).").tag(config=True)
        jobs = Int(1, help="Sandbox workers used while grading one notebook.").tag(config=True)

        def preprocess(self, nb, resources):
            info = resources.get("nbgrader", {})
            name = info.get("notebook") or NOTEBOOK_NAME
            repairs = repairs_of(info)
            unreadable = any(repair.kind == UNREADABLE for repair in repairs)
            restored = self._restore(nb, info, name)
            tests = [
                (module, cell)
                for cell in nb.cells
                if _is_kit_test_cell(cell) and (module := _module_of_test(cell)) is not None
            ]
            if not tests:
                return nb, resources
            number_code_cells(nb)  # the prompts on the feedback page: the report's "code cell N"
            points = self._points(info, name)
            try:
                if unreadable:  # nothing of it is a notebook: graded as the kit reads the file
                    result, missing, restored = (
                        self._submitted_result(name, info["student"], info["assignment"]),
                        set(),
                        set(),
                    )
                else:
                    result = self._result(nb, name, info.get("student"), info.get("assignment"))
                    missing = set(MODULES) - notebook_modules(nb, name)
            except Exception as exc:  # noqa: BLE001 - any failure must score 0, never crash the run
                self.log.error("attention-kit could not grade %s: %s", name, exc)
                result, missing = None, set()
            catalog = Catalog(self.lang)
            view = self._view(result, catalog, name)
            notes = [repair_text(repair, catalog) for repair in repairs]
            withheld = [withheld_text(item, catalog) for item in withheld_of(info)]
            for index, (module, cell) in enumerate(tests):
                cell_points = points.get(cell.metadata["nbgrader"].get("grade_id"), 0.0)
                cell.metadata["nbgrader"]["points"] = cell_points  # what SaveAutoGrades scores against
                cell.outputs = test_outputs(
                    cell,
                    result if view is not None else None,
                    module,
                    cell_points,
                    catalog,
                    view=view,
                    missing=missing,
                    restored=module in restored,
                    repairs=notes if index == 0 else [],
                    withheld=withheld if index == 0 else [],
                )
            if view is not None:
                add_overview(nb, view, catalog)
            return nb, resources

        def _view(self, result: GradeResult | None, catalog: Catalog, name: str) -> FeedbackView | None:
            """The report's views of the grading; None (every test cell scores 0) when they cannot be made."""
            if result is None:
                return None
            try:
                return feedback_view(result, catalog)
            except Exception as exc:  # noqa: BLE001 - fail closed, never crash the run
                self.log.error("attention-kit could not lay out the feedback of %s: %s", name, exc)
                return None

        def _restore(self, nb, info: dict, name: str) -> set[str]:
            """Put back the test cells the notebook lacks; returns their modules."""
            if not (info.get("db_url") and info.get("assignment")):
                return set()
            try:
                restored = restore_test_cells(nb, info["db_url"], name, info["assignment"])
            except Exception as exc:  # noqa: BLE001 - the cells present are still graded
                self.log.error("attention-kit could not put back deleted test cells of %s: %s", name, exc)
                return set()
            for module in sorted(restored):
                self.log.info(
                    "attention-kit: %s's test cell for %s was deleted; put back and graded", info.get("student"), module
                )
            return restored

        def _points(self, info: dict, name: str) -> dict[str, float]:
            """Test cell id -> its points, from the gradebook (the course's notebook), never from the
            student's copy; {} (every test cell worth 0) when the gradebook cannot be read."""
            try:
                course = course_cells(info["db_url"], name, info["assignment"])
            except Exception as exc:  # noqa: BLE001 - fail closed
                self.log.error("attention-kit could not read the points of %s from the gradebook: %s", name, exc)
                return {}
            return {cell_id: float(cell.points or 0.0) for cell_id, cell in course.items() if cell.grade}

        # One `nbgrader autograde` run grades many students one notebook at a time; the kit grades
        # a whole class at once much faster (one sandbox pool, reference outputs computed once).
        # So the first notebook of a run grades every submitted copy of it that this run will
        # autograde, and later notebooks reuse that result when their code is unchanged.
        _batches: dict = {}

        def _batch(self, name: str, student: str | None, assignment: str | None) -> tuple[str, GradeResult] | None:
            """This run's grading of the student's file as submitted: (its code's hash, its grading)."""
            key = (assignment, name)
            if student and assignment and key not in GradeWithKit._batches:
                GradeWithKit._batches[key] = self._grade_batch(name, assignment)
            return GradeWithKit._batches.get(key, {}).get(student)

        def _result(self, nb, name: str, student: str | None, assignment: str | None) -> GradeResult:
            cached = self._batch(name, student, assignment)
            if cached is not None and cached[0] == _code_hash(nb, name):
                return cached[1]
            return grade_notebook_document(nb, name, self.lang, self.jobs)

        def _submitted_result(self, name: str, student: str, assignment: str) -> GradeResult:
            """The kit's grading of the student's file as submitted, whatever nbgrader made of it."""
            cached = self._batch(name, student, assignment)
            if cached is not None:
                return cached[1]
            notebook = self._submitted(name, assignment, student)
            return grade_notebooks({student: notebook}, name, self.lang, self.jobs, self._submitted_root())[student][1]

        def _submitted_root(self) -> Path:
            """nbgrader's submitted/ folder: nothing below it is read through a link."""
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            return step_folder(coursedir, coursedir.submitted_directory)

        def _submitted(self, name: str, assignment: str, student: str) -> Path:
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            return Path(coursedir.format_path(coursedir.submitted_directory, student, assignment)) / f"{name}.ipynb"

        def _grade_batch(self, name: str, assignment: str) -> dict[str, tuple[str, GradeResult]]:
            import fnmatch

            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            pattern = coursedir.student_id or "*"
            notebooks = {}
            root = Path(coursedir.root) / coursedir.submitted_directory
            for folder in sorted(root.iterdir()) if root.is_dir() else []:
                if folder.is_symlink() or not folder.is_dir() or folder.name.startswith("."):
                    continue  # (a student's folder that is a link is read, and refused, on its own)
                if not fnmatch.fnmatch(folder.name, pattern):
                    continue
                notebook = self._submitted(name, assignment, folder.name)
                if notebook.is_file():
                    notebooks[folder.name] = notebook
            if not notebooks:
                return {}
            try:
                import time

                started = time.perf_counter()
                graded = grade_notebooks(notebooks, name, self.lang, self.jobs, self._submitted_root())
                self.log.info(
                    "attention-kit graded %d copies of %s in %.1f s", len(graded), name, time.perf_counter() - started
                )
                return graded
            except Exception as exc:  # noqa: BLE001 - fall back to grading one notebook at a time
                self.log.warning("attention-kit: batch grading failed (%s); grading notebooks one by one", exc)
                return {}


def _nbgrader_metadata(cell: Any) -> dict:
    """A cell's nbgrader metadata, or {} when the student's notebook holds something else there."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else {}


def _is_kit_test_cell(cell: Any) -> bool:
    meta = _nbgrader_metadata(cell)
    return (
        cell.get("cell_type") == "code"
        and bool(meta.get("grade"))
        and not meta.get("solution")
        and _module_of_test(cell) is not None
    )


def _module_of_test(cell: Any) -> str | None:
    module = str(_nbgrader_metadata(cell).get("grade_id", "")).removeprefix("test_")
    return module if module in MODULES else None
