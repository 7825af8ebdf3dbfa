"""Hostile links, look-alike names and code compiled under a file's name, against the trusted code:
each attack that succeeded, as a test that the kit now holds (they were strict xfail reproducers
until the kit was fixed).

The attacks, as a hostile student or an unlucky class would make them:

- nbgrader autograde copies every extra file of a submitted folder, following links, into the
  autograded folder, and generate_feedback copies it on into the student's feedback folder (what
  `nbgrader release_feedback` hands back): a link to the course's source notebook gives the
  student the answer key, a link to any file of the machine gives them that file;
- the same copy reads whatever a link points to, so a link to the terminal autograde runs in
  (``/dev/stdin``) makes autograde wait for ever: no student after that one is graded;
- a notebook line that continues an expression and starts with an operator (``% 2``, ``!= b``,
  PEP 8's "break before binary operators") is rewritten as if it were an IPython magic: correct
  code fails to import, and the report quotes ``pass  # % 2 == 0)`` as the student's line;
- `grade export --roster` gives a folder's grade to the first of two roster rows with the same key
  (two students named 王伟), silently;
- look-alike letters outside the Cyrillic and Greek rows (Armenian օ, Cherokee Ꭺ, Latin ɑ, ı) are
  not made visible: a classmate is listed exactly like the student they imitate;
- code compiled at run time under the module's own file name raises, and the report quotes the
  line of the file with that number (a docstring) as the line that raised.

Ran and held (no test here): names that take class outputs' folders (gradebook.csv, summary.html,
case twins, an altered name's form), every dtype and layout of returned tensor (bfloat16, float8,
complex, sparse, meta, nested, quantized, 0-d, 22-d, huge, expanded), exceptions whose message,
type name or function name carry Markdown, HTML, fences, ANSI and bidi controls, SystemExit and
KeyboardInterrupt, a failing __str__, notes, prints; reading the machine from the sandbox.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, solutions_as_submission

# -- a notebook's continuation lines are not magics ---------------------------------------------------

CONTINUED = (
    "\n\ndef _is_even(n):\n    return (n\n            % 2 == 0)\n\n\n"
    "def _differs(a, b):\n    return (a\n            != b)\n"
)


def _notebook(source: str) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def test_ipython_reads_an_operator_at_the_start_of_a_continuation_line_as_python():
    """The premise: IPython runs such a cell as plain Python (a magic starts a logical line only)."""
    transformers = pytest.importorskip("IPython.core.inputtransformer2")
    cell = "x = (7\n     % 2)\ny = (3\n     != 4)\n"
    assert transformers.TransformerManager().transform_cell(cell) == cell


def test_a_notebook_line_continuing_an_expression_with_an_operator_is_graded_as_python(tmp_path):
    from grader.run import grade

    module = "sec3_3_simple_attention"
    code = (ROOT / "solutions" / f"{module}.py").read_text() + CONTINUED
    as_py = solutions_as_submission(tmp_path / "class" / "as_py")
    (as_py / f"{module}.py").write_text(code)
    as_notebook = solutions_as_submission(tmp_path / "class" / "as_notebook")
    (as_notebook / f"{module}.py").unlink()
    (as_notebook / f"{module}.ipynb").write_text(_notebook(code))

    grade(tmp_path / "class", tmp_path / "out", jobs=2, force=True)

    results = {
        name: json.loads((tmp_path / "out" / name / "results.json").read_text()) for name in ("as_py", "as_notebook")
    }
    feedback = (tmp_path / "out" / "as_notebook" / "feedback.md").read_text()
    assert "pass  #" not in feedback  # never quoted as the student's code: they did not write it
    assert results["as_notebook"]["score"] == results["as_py"]["score"] == results["as_py"]["max_score"]


# -- nbgrader: the extra files of a submitted folder ---------------------------------------------------

nbgrader_e2e = pytest.importorskip("tests.test_nbgrader_e2e")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with the assignment generated; the correct notebook, to hand in."""
    base = tmp_path_factory.mktemp("nbgrader-fresh")
    course = nbgrader_e2e.generated_course(base, tmp_path_factory)
    source, release = nbgrader_e2e.read_notebooks(course)
    return course, nbgrader_e2e._student_notebook(source, release, nbgrader_e2e.correct)


def _answer_key(course: Path) -> bytes:
    return (course / "source" / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.ipynb").read_bytes()


@pytest.mark.nbgrader
def test_a_linked_file_in_a_submission_never_reaches_the_students_feedback(course, tmp_path):
    course, good = course
    classmate = copy.deepcopy(good)
    classmate["cells"][-1]["source"] = "# bob-s own work, 8c1f\n" + "".join(classmate["cells"][-1]["source"])
    bob = nbgrader_e2e.hand_in(course, "bob", classmate)
    handed = nbgrader_e2e.hand_in(course, "mallory", copy.deepcopy(good))
    folder = handed.parent
    # what an unzipped upload can hold: links, relative to the submission, to the course's files, to
    # a classmate's, to the machine's; a hard link, a named pipe, a device; a link in a subfolder
    key = f"../../../source/{nbgrader_e2e.ASSIGNMENT}/{nbgrader_e2e.NOTEBOOK_NAME}.ipynb"
    os.symlink(key, folder / "notes.txt")
    os.symlink("/etc/passwd", folder / "machine.txt")
    os.symlink(f"../../bob/{nbgrader_e2e.ASSIGNMENT}/{bob.name}", folder / "classmate.txt")
    os.link(course / "source" / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.ipynb", folder / "hard.txt")
    os.mkfifo(folder / "pipe")
    os.symlink("/dev/zero", folder / "zero")
    (folder / "sub").mkdir()
    os.symlink(f"../{key}", folder / "sub" / "inner.txt")
    (folder / "plain.txt").write_text("my own notes\n")
    # and a student whose whole assignment folder is a link to a classmate's
    (course / "submitted" / "eve").mkdir()
    os.symlink(f"../bob/{nbgrader_e2e.ASSIGNMENT}", course / "submitted" / "eve" / nbgrader_e2e.ASSIGNMENT)

    for student in ("mallory", "eve"):
        graded = nbgrader_e2e.nbgrader(course, "autograde", nbgrader_e2e.ASSIGNMENT, "--student", student, check=False)
        assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
        fed = nbgrader_e2e.nbgrader(
            course, "generate_feedback", nbgrader_e2e.ASSIGNMENT, "--student", student, check=False
        )
        assert fed.returncode == 0, fed.stdout[-3000:] + fed.stderr[-3000:]

    secrets = {"answer key": _answer_key(course), "machine": Path("/etc/passwd").read_bytes(), "bob": bob.read_bytes()}
    for student in ("mallory", "eve"):
        handed_back = [
            file
            for step in ("autograded", "feedback")
            for file in (course / step / student).rglob("*")
            if file.is_file()
        ]
        assert handed_back, f"autograde and generate_feedback wrote nothing for {student}"
        leaked = [
            (str(file.relative_to(course)), what)
            for file in handed_back
            for what, secret in secrets.items()
            if file.read_bytes() == secret or b"bob-s own work" in file.read_bytes()
        ]
        assert leaked == []
        assert not [
            file
            for step in ("autograded", "feedback")
            for file in (course / step / student).rglob("*")
            if file.is_symlink()
        ]
    autograded = course / "autograded" / "mallory" / nbgrader_e2e.ASSIGNMENT
    assert (autograded / "plain.txt").read_text() == "my own notes\n"  # a plain file is copied as nbgrader would
    for name in ("notes.txt", "machine.txt", "classmate.txt", "hard.txt", "pipe", "zero", "sub/inner.txt"):
        assert (autograded / name).read_text().startswith("attention-kit did not copy this file"), name
        assert (course / "feedback" / "mallory" / nbgrader_e2e.ASSIGNMENT / name).is_file(), name
    page = (
        course / "feedback" / "mallory" / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.html"
    ).read_text()
    for said in (
        "notes.txt is a link",
        "hard.txt is a hard link",
        "pipe is not a regular file",
        "sub/inner.txt is a link",
    ):
        assert said in page, said  # the student is told, in their feedback


def _under_a_terminal(course: Path, students: str) -> int | None:
    """`nbgrader autograde --student STUDENTS` with a terminal nobody types in as its standard input;
    its exit status, or None when it had to be stopped."""
    from grader.classroom.nbgrader_env import tools_dir

    terminal, terminal_side = pty.openpty()
    command = [str(tools_dir() / "nbgrader"), "autograde", nbgrader_e2e.ASSIGNMENT, "--student", students]
    try:
        process = subprocess.Popen(
            command,
            cwd=course,
            env=nbgrader_e2e.clean_env(course.parent / "home"),
            stdin=terminal_side,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            return process.wait(timeout=600)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None
    finally:
        os.close(terminal)
        os.close(terminal_side)


@pytest.mark.nbgrader
def test_a_file_linked_to_the_terminal_does_not_stop_autograde(course):
    course, good = course
    handed = nbgrader_e2e.hand_in(course, "hang_a", copy.deepcopy(good))  # graded first
    os.symlink("/dev/stdin", handed.parent / "notes.txt")
    handed = nbgrader_e2e.hand_in(course, "hang_b", copy.deepcopy(good))
    (handed.parent / "timestamp.txt").unlink()
    os.symlink("/dev/stdin", handed.parent / "timestamp.txt")  # nbgrader opened it to read the time
    handed = nbgrader_e2e.hand_in(course, "hang_c", copy.deepcopy(good))
    (handed.parent / "timestamp.txt").write_text("2024-01-01 00:00:00.000000 /dev/stdin")  # a time zone's "file"
    handed = nbgrader_e2e.hand_in(course, "hang_d", copy.deepcopy(good))
    (handed.parent / "timestamp.txt").unlink()
    os.mkfifo(handed.parent / "timestamp.txt")
    os.mkfifo(handed.parent / "notes.fifo")  # shutil.copy refused it: autograde exited 1
    nbgrader_e2e.hand_in(course, "hang_z", copy.deepcopy(good))

    students = ("hang_a", "hang_b", "hang_c", "hang_d", "hang_z")
    assert _under_a_terminal(course, "hang_*") == 0  # it ends, and no student is an error
    for student in students:
        assert (
            course / "autograded" / student / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.ipynb"
        ).is_file(), student
    nbgrader_e2e.nbgrader(course, "generate_feedback", nbgrader_e2e.ASSIGNMENT, "--student", "hang_*")
    nbgrader_e2e.nbgrader(course, "export")
    with open(course / "grades.csv", newline="") as handle:
        scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(handle)}
    assert all(scores[student][0] == scores[student][1] > 0 for student in students), scores  # all correct work
    notes = course / "feedback" / "hang_d" / nbgrader_e2e.ASSIGNMENT
    assert (notes / "notes.fifo").read_text().startswith("attention-kit did not copy this file")
    assert "notes.fifo is not a regular file" in (notes / f"{nbgrader_e2e.NOTEBOOK_NAME}.html").read_text()


# -- grade export: a roster with two rows for one folder -----------------------------------------------


def test_export_never_gives_a_grade_to_one_of_two_roster_rows_that_match_the_same_folder(tmp_path):
    import shutil

    from grader.classroom.lms_export import export
    from grader.i18n import Catalog
    from grader.run import grade

    klass = tmp_path / "class"
    shutil.copytree(ROOT / "examples" / "class" / "alice", klass / "王伟")
    shutil.copytree(ROOT / "examples" / "class" / "bob", klass / "bob")
    grade(klass, tmp_path / "out", jobs=2, force=True)
    roster = tmp_path / "roster.csv"  # the LMS's own gradebook export: two students of the same name
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        "王伟,101,s101,wangwei1,A\n王伟,102,s102,wangwei2,B\nbob,103,s103,bob,A\n",
        encoding="utf-8",
    )

    done = export(tmp_path / "out", lms="canvas", assignment="Chapter 3", catalog=Catalog("en"), roster=roster)

    rows = (tmp_path / "out" / "canvas-grades.csv").read_text(encoding="utf-8").splitlines()
    guessed = [row for row in rows if row.split(",")[1] in ("101", "102")]
    assert guessed == [], f"one of the two 王伟 got the folder's grade: {guessed}"
    assert done.ambiguous_rows == ["王伟"]  # named, with the reason the CLI gives (export-ambiguous-rows)
    assert [row.split(",")[1] for row in rows[2:]] == ["103"]  # bob still gets his grade
    assert "王伟" not in done.unmatched and done.not_submitted == []


# -- names: look-alike letters outside the Cyrillic and Greek rows --------------------------------------

# Pairs Unicode's confusables.txt lists as drawn alike: Armenian օ (U+0585) for o, Cherokee Ꭺ Ꮮ Ꮯ Ꭼ
# for A L C E (and Ꮖ for I, which confusables.txt does not list), Latin alpha ɑ (U+0251) for a,
# Latin dotless ı (U+0131) for i.
LOOK_ALIKES = [
    ("john", "j\u0585hn"),
    ("ALICE", "\u13aa\u13de\u13c6\u13df\u13ac"),
    ("anna", "\u0251nn\u0251"),
    ("alice", "al\u0131ce"),
]


@pytest.mark.parametrize("victim, twin", LOOK_ALIKES)
def test_a_name_drawn_like_a_classmates_is_told_apart_in_listings(victim, twin):
    from grader.intake.names import display_names

    shown = display_names([victim, twin])
    # as for a Cyrillic twin ("\u0456van" beside "ivan"): the look-alike letters are made visible
    assert [c for c in twin if not c.isascii() and c in shown[twin]] == [], shown
    assert shown[victim] == victim  # the student imitated is listed by their name, as it is


# -- a frame of code compiled under the module's own file name -----------------------------------------


def test_code_compiled_under_the_modules_file_name_is_not_quoted_from_the_file(tmp_path):
    from grader.run import grade

    module = "sec3_3_simple_attention"
    submission = solutions_as_submission(tmp_path / "student")
    source = (submission / f"{module}.py").read_text()
    ran = "raise ValueError('generated')"
    # line 9 of the generated text raises; line 9 of the file is a docstring
    forged = f"exec(compile('\\n' * 8 + {ran!r}, __file__, 'exec'))"
    changed = source.replace("return inputs @ inputs.T", forged, 1)
    assert changed != source
    (submission / f"{module}.py").write_text(changed)

    grade(submission, tmp_path / "out", jobs=1, force=True)

    feedback = (tmp_path / "out" / "feedback.md").read_text()
    quoted = re.findall(r"line 9, in `<module>`: `([^`]*)`", feedback)
    file_line_9 = changed.split("\n")[8].strip()
    assert file_line_9 not in quoted  # quoting it says the docstring raised ValueError
    # what is said instead is true: the line of the file that ran the generated code, quoted as it is
    line = changed.split("\n").index(next(text for text in changed.split("\n") if forged in text)) + 1
    assert f"line {line}, in `attention_scores`: `{forged}" in feedback.replace("\\_", "_")


def _compiled_under_its_name(folder: Path) -> Path:
    """A module whose functions run text compiled under the module's own file name."""
    folder.mkdir()
    (folder / "generated_here.py").write_text(
        '"""Line 1."""\n\n\ndef ran():\n'
        '    exec(compile("\\n" * 5 + "raise ValueError(7)", __file__, "exec"))\n\n\n'
        'def unparsable():\n    compile("\\n(", __file__, "exec")\n\n\n'
        "def defined():\n    scope = {}\n"
        '    exec(compile("\\n" * 12 + "def f():\\n    raise KeyError(3)", __file__, "exec"), scope)\n'
        '    return scope["f"]\n'
    )
    (folder / "broken_file.py").write_text("x = 1\n\ny = (\n")
    return folder


def test_frames_of_code_compiled_under_a_files_name_are_left_out_and_the_line_that_ran_it_kept(tmp_path):
    import sys

    from grader.probes import own_code
    from grader.sandbox.driver import StudentNamespace, describe_error

    folder = _compiled_under_its_name(tmp_path / "student")
    ns = StudentNamespace(str(folder))
    try:
        module = ns.module("generated_here")
        assert own_code.from_its_file(module.ran.__code__) and own_code.from_its_file(module.defined.__code__)
        assert not own_code.from_its_file(module.defined().__code__)
        said = []
        for call in (module.ran, module.unparsable, module.defined()):
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - described as the sandbox describes it
                said.append(describe_error(exc, str(folder)))
        # the line that compiled or ran the text (5, 9) is the place; a line of the text is none
        assert [[(f["line"], f["function"]) for f in error["frames"]] for error in said] == [
            [(5, "ran")],
            [(9, "unparsable")],
            [],  # a function defined by the compiled text: no line of the file ran
        ]
        assert said[2]["exc_type"] == "KeyError" and said[2]["module"] == ""
        try:
            ns.module("broken_file")
        except Exception as exc:  # noqa: BLE001
            broken = describe_error(exc, str(folder))
        assert [(f["file"], f["line"]) for f in broken["frames"]] == [("broken_file.py", 3)]  # the file's own error
    finally:
        sys.path.remove(ns.directory)
        for name in ("generated_here", "broken_file"):
            sys.modules.pop(name, None)


def test_a_trace_places_no_op_on_a_line_of_text_compiled_under_a_files_name(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from in_process import trace_probes

    from grader.diagnosis.trace.documents import parse_trace

    module = "sec3_3_simple_attention"
    submission = solutions_as_submission(tmp_path / "student")
    source = (submission / f"{module}.py").read_text()
    generated = (
        "scope = {'inputs': inputs}\n    "
        "exec(compile('\\n' * 8 + 'result = inputs @ inputs.T', __file__, 'exec'), scope)\n"
        "    return scope['result']"
    )
    changed = source.replace("return inputs @ inputs.T", generated, 1)
    (submission / f"{module}.py").write_text(changed)
    lines = changed.split("\n")
    exec_line = next(n for n, text in enumerate(lines, 1) if "exec(compile(" in text)

    trace = parse_trace(trace_probes(submission, [f"{module}:context_vectors"])[f"{module}:context_vectors"])
    sites = {(op.site.file, op.site.line) for op in trace.ops if op.name in ("matmul", "__matmul__")}
    assert sites and all(line != 9 for _, line in sites), sites  # line 9 of the file is no code of it
    assert (f"{module}.py", exec_line) in sites
