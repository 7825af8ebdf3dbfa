"""A fresh-eyed attack on the trusted code, after round three: each successful attack as a minimal
failing reproducer (xfail, strict: the suite stays green until the kit is fixed, and a fix makes
the test pass, which strict mode then reports so that the mark is removed).

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
import json
import os
import pty
import re
import subprocess
import time
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


@pytest.mark.xfail(
    strict=True,
    reason="notebook intake rewrites any line starting with % or ! as a magic, "
    "even a continuation line: correct code fails to import and the "
    "report quotes the rewritten line as the student's",
)
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
    course = nbgrader_e2e.create_course(base)
    nbgrader_e2e.nbgrader(course, "generate_assignment", nbgrader_e2e.ASSIGNMENT)
    source, release = nbgrader_e2e.read_notebooks(course)
    return course, nbgrader_e2e._student_notebook(source, release, nbgrader_e2e.correct)


@pytest.mark.nbgrader
@pytest.mark.xfail(
    strict=True,
    reason="nbgrader's autograde and generate_feedback copy a submission's extra "
    "files following links: a link to the course's source notebook puts "
    "the answer key in the student's feedback folder",
)
def test_a_linked_file_in_a_submission_never_reaches_the_students_feedback(course, tmp_path):
    course, good = course
    handed = nbgrader_e2e.hand_in(course, "mallory", copy.deepcopy(good))
    # what an unzipped upload can hold: links, relative to the submission, to the course's files
    os.symlink(
        f"../../../source/{nbgrader_e2e.ASSIGNMENT}/{nbgrader_e2e.NOTEBOOK_NAME}.ipynb", handed.parent / "notes.txt"
    )
    os.symlink("/etc/passwd", handed.parent / "machine.txt")
    nbgrader_e2e.nbgrader(course, "autograde", nbgrader_e2e.ASSIGNMENT, "--student", "mallory", check=False)
    nbgrader_e2e.nbgrader(course, "generate_feedback", nbgrader_e2e.ASSIGNMENT, "--student", "mallory", check=False)

    answer_key = (course / "source" / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.ipynb").read_bytes()
    machine = Path("/etc/passwd").read_bytes()
    handed_back = [
        file for step in ("autograded", "feedback") for file in (course / step / "mallory").rglob("*") if file.is_file()
    ]
    assert handed_back, "autograde and generate_feedback wrote nothing for the student"
    leaked = [str(file.relative_to(course)) for file in handed_back if file.read_bytes() in (answer_key, machine)]
    assert leaked == []


def opened_elsewhere(terminal: str) -> bool:
    """Whether a process other than this one holds TERMINAL open beyond its standard streams: it
    opened the link to /dev/stdin, and reading it waits for ever, since nobody types."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = [fd for fd in os.listdir(f"/proc/{pid}/fd") if int(fd) > 2]
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == terminal for fd in fds):
                return True
        except OSError:  # ended, or not ours to read
            continue
    return False


def until_done_or_stuck(process: subprocess.Popen, terminal: str, seconds: float) -> None:
    """Wait for PROCESS to end, or kill it as soon as it has opened TERMINAL through the link (what
    it then reads never comes) or after SECONDS."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            process.wait(timeout=0.1)
            return
        except subprocess.TimeoutExpired:
            if opened_elsewhere(terminal):
                break
    process.kill()
    process.wait()


@pytest.mark.nbgrader
@pytest.mark.xfail(
    strict=True,
    reason="nbgrader's autograde reads a submission's linked file to copy it: a "
    "link to /dev/stdin, autograde run from a terminal, waits for ever and "
    "no student after that one is graded",
)
def test_a_file_linked_to_the_terminal_does_not_stop_autograde(course):
    course, good = course
    handed = nbgrader_e2e.hand_in(course, "hang_a", copy.deepcopy(good))  # graded first
    os.symlink("/dev/stdin", handed.parent / "notes.txt")
    nbgrader_e2e.hand_in(course, "hang_z", copy.deepcopy(good))
    from grader.classroom.nbgrader_env import tools_dir

    terminal, terminal_side = pty.openpty()  # the instructor's terminal: nobody types anything
    command = [str(tools_dir() / "nbgrader"), "autograde", nbgrader_e2e.ASSIGNMENT, "--student", "hang_*"]
    try:
        process = subprocess.Popen(
            command,
            cwd=course,
            env=nbgrader_e2e.clean_env(course.parent / "home"),
            stdin=terminal_side,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        until_done_or_stuck(process, os.ttyname(terminal_side), seconds=240)
    finally:
        os.close(terminal)
        os.close(terminal_side)
    assert (
        course / "autograded" / "hang_z" / nbgrader_e2e.ASSIGNMENT / f"{nbgrader_e2e.NOTEBOOK_NAME}.ipynb"
    ).is_file()


# -- grade export: a roster with two rows for one folder -----------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="grade export matches a folder to the first of several roster rows "
    "with the same key (two students named 王伟): the grade goes to "
    "whichever comes first, silently",
)
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
    assert any("王伟" in name for name in done.ambiguous + done.unmatched)


# -- names: look-alike letters outside the Cyrillic and Greek rows --------------------------------------

# Pairs Unicode's confusables.txt lists as drawn alike: Armenian օ (U+0585) for o, Cherokee Ꭺ Ꮮ Ꮖ Ꮯ Ꭼ
# for A L T C E, Latin alpha ɑ (U+0251) for a, Latin dotless ı (U+0131) for i.
LOOK_ALIKES = [
    ("john", "j\u0585hn"),
    ("ALICE", "\u13aa\u13de\u13c6\u13df\u13ac"),
    ("anna", "\u0251nn\u0251"),
    ("alice", "al\u0131ce"),
]


@pytest.mark.xfail(
    strict=True,
    reason="only the common Cyrillic and Greek rows of confusables.txt count as "
    "look-alikes: a classmate named with Armenian, Cherokee or Latin-extended "
    "look-alike letters is listed exactly like the victim",
)
@pytest.mark.parametrize("victim, twin", LOOK_ALIKES)
def test_a_name_drawn_like_a_classmates_is_told_apart_in_listings(victim, twin):
    from grader.intake.names import display_names

    shown = display_names([victim, twin])
    # as for a Cyrillic twin ("\u0456van" beside "ivan"): the look-alike letters are made visible
    assert [c for c in twin if not c.isascii() and c in shown[twin]] == [], shown


# -- a frame of code compiled under the module's own file name -----------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="a traceback frame is quoted from the module's file by its file name "
    "alone: code compiled at run time under that name (exec, compile) gets "
    "a line of the file quoted that never ran",
)
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
