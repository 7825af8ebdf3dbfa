"""On Gradescope and PrairieLearn an upload is one student's submission, whatever its names look
like (issue 36, point 4): never a class, never an LMS download. A chapter notebook named
``hw_3_1_attention.ipynb`` or ``2024_10_15_attention.ipynb`` (names an LMS's pattern reads), a zip
of ``ch3/`` and ``ch3_backup/`` (two folders, as a class has) are graded as the student's own; of
two folders that hold code the most complete is graded, and a remark says which, in both languages.

The layouts are generated (file and folder names that look like Canvas's, Moodle's, a class's or
nothing in particular); the grading itself is stopped at its start (`run_grading`), where what the
platform's entry point asks to grade is recorded: no sandbox runs. One real run per platform
grades the issue's names end to end.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import grader.run
from grader.classroom import gradescope, prairielearn
from grader.classroom.deployment import grade_upload
from grader.i18n import Catalog
from grader.intake.uploads import IGNORED_FOLDERS
from grader.records import MODULES
from tests.conftest import solutions_as_submission
from tests.student_notebooks import chapter_notebook, module_sources

SOLUTIONS = module_sources(solutions_as_submission(Path(tempfile.mkdtemp(prefix="attention-kit-solutions-"))))
NOTEBOOK = json.dumps(chapter_notebook(SOLUTIONS, "plain"))


class Stopped(Exception):
    """What `grade_upload` asked the grading run to grade."""

    def __init__(self, loaders: list, is_class: bool):
        super().__init__("stopped")
        self.submissions = [load() for load in loaders]
        self.is_class = is_class


def _stop(loaders, out_dir, is_class, *args):
    raise Stopped(loaders, is_class)


NAME = st.one_of(
    st.text(st.sampled_from("abcxyz0123456789_- "), min_size=1, max_size=14),
    st.builds(
        lambda a, b, c: f"{a}_{b}_{c}",
        st.sampled_from(["hw", "2024", "x", "ch3"]),
        st.integers(0, 99),
        st.integers(0, 99),
    ),
    st.builds(lambda a, b: f"{a}_{b}_assignsubmission_file", st.sampled_from(["Wei Zhang", "x"]), st.integers(1, 99)),
    st.builds(lambda a, b: f"{a}_LATE_{b}_{b}", st.sampled_from(["smith", "hw"]), st.integers(1, 99)),
).filter(lambda n: n.strip() == n and n and not n.startswith(".") and n not in IGNORED_FOLDERS and "/" not in n)


@st.composite
def upload(draw):
    """(files of the upload: path -> bytes, the folder that must be graded or "", the other folder
    that holds code or "")."""
    shape = draw(st.sampled_from(["notebook", "modules", "two-folders", "zip-of-two-folders"]))
    if shape == "notebook":
        return {f"{draw(NAME)}.ipynb": NOTEBOOK.encode()}, "", ""
    if shape == "modules":
        extra = {f"{draw(NAME)}.ipynb": b"{}"} if draw(st.booleans()) else {}
        return {f"{m}.py": s.encode() for m, s in SOLUTIONS.items()} | extra, "", ""
    full, partial = draw(NAME), draw(NAME)
    assume(full != partial)
    kept = draw(st.lists(st.sampled_from(MODULES), unique=True, max_size=len(MODULES) - 1))
    files = {f"{full}/{m}.py": s.encode() for m, s in SOLUTIONS.items()}
    files |= {f"{partial}/{m}.py": SOLUTIONS[m].encode() for m in kept}
    other = partial if kept else ""
    if not kept and draw(st.booleans()):
        files[f"{partial}/{draw(NAME)}.ipynb"] = b"{}"
        other = partial
    if shape == "zip-of-two-folders":
        return {f"{draw(NAME)}.zip": zipped(files)}, full, other
    return files, full, other


def zipped(files: dict[str, bytes]) -> bytes:
    path = Path(tempfile.mkdtemp()) / "u.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upload())
def test_an_upload_is_one_students_submission_whatever_its_names(monkeypatch, layout):
    files, graded_folder, other = layout
    monkeypatch.setattr(grader.run, "run_grading", _stop)
    with tempfile.TemporaryDirectory() as base:
        root = Path(base) / "submission"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        with pytest.raises(Stopped) as stopped:
            grade_upload(root, lang="en")
    assert not stopped.value.is_class
    [submission] = stopped.value.submissions
    assert set(submission.sources) == set(MODULES), submission.problems
    remarks = [note for note in submission.intake.remarks if note.kind == "upload-folder"]
    if other:
        assert [note.detail for note in remarks] == [f"{graded_folder} ({other})"]
    else:
        assert remarks == []


def test_the_remark_on_the_graded_folder_is_said_in_both_languages():
    for lang in ("en", "zh"):
        text = Catalog(lang).t("found.remark.upload-folder", detail="ch3 (ch3_backup)")
        assert "ch3 (ch3_backup)" in text and "{" not in text


# -- the uploads, graded for real ------------------------------------------------------------


def test_gradescope_grades_hw_3_1_attention_ipynb_in_full(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "hw_3_1_attention.ipynb").write_text(NOTEBOOK)
    result = gradescope.run(tmp_path)
    assert result["score"] == 63.0, result["output"][:500]


def test_prairielearn_grades_a_zip_of_ch3_and_ch3_backup_and_says_which(tmp_path):
    files = {f"ch3/{m}.py": s.encode() for m, s in SOLUTIONS.items()}
    files["ch3_backup/sec3_3_simple_attention.py"] = SOLUTIONS["sec3_3_simple_attention"].encode()
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "2024_10_15_attention.zip").write_bytes(zipped(files))
    result = prairielearn.run(tmp_path)
    assert result.get("gradable", True) and result["score"] == 1.0, result
    assert "ch3 (ch3_backup)" in json.dumps(result, ensure_ascii=False)
