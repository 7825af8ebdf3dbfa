"""Subcommands of `grade` other than grading itself (release, nbgrader, gradescope, prairielearn, export)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from grader.classroom.gradescope import VISIBILITIES, build_autograder_zip
from grader.classroom.lms_export import GROUPINGS, LMS, ExportError, export
from grader.classroom.nbgrader_env import nbgrader_executable
from grader.classroom.prairielearn_question import (
    DEFAULT_IMAGE,
    DEFAULT_TIMEOUT,
    QUESTION_ID,
    SUBMIT_MODES,
    QuestionError,
    write_question,
)
from grader.classroom.release import ReleaseError, write_release
from grader.i18n import LANGUAGES, Catalog
from grader.lms import FORMATS


def _release(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grade release", description="Write the student bundle: stubs, README and public self-checks."
    )
    parser.add_argument("out", type=Path, help="folder to write the bundle to")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="default language of README and check.py")
    parser.add_argument("--force", action="store_true", help="write into an existing non-empty folder")
    parser.add_argument(
        "--framework",
        choices=("pytorch", "mindspore"),
        default="pytorch",
        help="the stubs and self-check of the PyTorch track (default) or the MindSpore track",
    )
    args = parser.parse_args(argv)
    try:
        files = write_release(args.out, lang=args.lang, force=args.force, framework=args.framework)
    except ReleaseError as exc:
        parser.exit(2, f"grade release: {exc}\n")
    print(Catalog(args.lang).t("cli.release-written", count=len(files), path=args.out))
    return 0


def _nbgrader(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grade nbgrader", description="Create an nbgrader course for Chapter 3, graded by this kit."
    )
    parser.add_argument("course_dir", type=Path, help="the nbgrader course root to create")
    parser.add_argument("--assignment", default="ch3", help="assignment name (default: ch3)")
    parser.add_argument("--course-id", default="attention-kit-ch3")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the notebook and feedback")
    parser.add_argument(
        "--run-student-kernel",
        action="store_true",
        help="autograde also runs each notebook in a Jupyter kernel so that feedback shows the "
        "students' outputs (that kernel is not sandboxed; scores still come from the kit)",
    )
    args = parser.parse_args(argv)
    from grader.classroom.nbgrader_course import create_course  # nbgrader and nbconvert: 1.7 s of CPU to import

    notebook = create_course(
        args.course_dir,
        assignment=args.assignment,
        course_id=args.course_id,
        lang=args.lang,
        run_student_kernel=args.run_student_kernel,
    )
    catalog = Catalog(args.lang)
    print(catalog.t("cli.course-written", config=args.course_dir / "nbgrader_config.py", notebook=notebook))
    # nbgrader of this environment by its full path: the next step works in a shell where it is not activated.
    print(
        catalog.t(
            "cli.course-next",
            course=shlex.quote(str(args.course_dir)),
            assignment=args.assignment,
            nbgrader=shlex.quote(nbgrader_executable()),
        )
    )
    return 0


def _gradescope(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grade gradescope", description="Build a Gradescope autograder zip that grades with this kit."
    )
    parser.add_argument("out", type=Path, help="the zip file to write, e.g. autograder.zip")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the students' feedback")
    parser.add_argument(
        "--visibility",
        default="visible",
        choices=VISIBILITIES,
        help="when students see each test's result (Gradescope's visibility)",
    )
    args = parser.parse_args(argv)
    path = build_autograder_zip(args.out, lang=args.lang, visibility=args.visibility)
    catalog = Catalog(args.lang)
    print(catalog.t("cli.file-written", path=path))
    print(catalog.t("deploy.cli.gradescope-next", path=path))
    return 0


def _prairielearn(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grade prairielearn",
        description="Write an externally graded PrairieLearn question and the recipe "
        "of the Docker image that grades it with this kit.",
    )
    parser.add_argument("out", type=Path, help="folder to write questions/ and grader-image/ to")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the question and the feedback")
    parser.add_argument(
        "--image",
        default=DEFAULT_IMAGE,
        help=f"the grading image's Docker Hub name, e.g. you/attention-kit-grader (default: {DEFAULT_IMAGE})",
    )
    parser.add_argument(
        "--submit",
        choices=SUBMIT_MODES,
        default="upload",
        help="students upload their .py files or notebooks (default), or write in seven editors",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT,
        help=f"seconds PrairieLearn allows a grading job (default: {DEFAULT_TIMEOUT}, from 90 to 600)",
    )
    args = parser.parse_args(argv)
    catalog = Catalog(args.lang)
    try:
        files = write_question(args.out, lang=args.lang, image=args.image, submit=args.submit, timeout=args.timeout)
    except QuestionError as exc:
        parser.exit(
            2,
            catalog.t(
                "deploy.cli.cannot-write-question", reason=catalog.t(f"prairielearn.error.{exc.key}", **exc.params)
            )
            + "\n",
        )
    print(
        catalog.t(
            "deploy.cli.question-written",
            question=args.out / "questions" / QUESTION_ID,
            image=args.out / "grader-image",
            count=len(files),
        )
    )
    print(catalog.t("deploy.cli.question-next", readme=args.out / "README.md"))
    return 0


def _export(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grade export",
        description="Write a gradebook CSV that Canvas, Moodle, Blackboard Learn or Brightspace imports, from the "
        "reports of an earlier `grade` run (nothing is graded again).",
    )
    parser.add_argument("reports", type=Path, help="the output folder of `grade` (e.g. reports/)")
    parser.add_argument("--lms", choices=LMS, required=True, help="the learning management system to import into")
    parser.add_argument(
        "--by",
        choices=GROUPINGS,
        default="assignment",
        help="one points column for the assignment (default) or one per book section",
    )
    parser.add_argument(
        "--assignment",
        default=None,
        help='the assignment\'s title (Canvas: a new or existing assignment; for an existing one, "Title (id)")',
    )
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="a CSV listing the students, e.g. the LMS's own gradebook export: its identity columns "
        "are copied, and only the students it lists are written",
    )
    parser.add_argument(
        "--roster-key",
        default=None,
        help="the roster's column that holds the student folder names (default: the one that matches)",
    )
    parser.add_argument("--to", type=Path, default=None, help="the CSV to write (default: REPORTS/<lms>-grades.csv)")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of section titles and messages")
    args = parser.parse_args(argv)
    catalog = Catalog(args.lang)
    try:
        done = export(
            args.reports,
            lms=args.lms,
            by=args.by,
            catalog=catalog,
            roster=args.roster,
            roster_key=args.roster_key,
            to=args.to,
            assignment=args.assignment if args.assignment is not None else catalog.t("export.default-assignment"),
        )
    except ExportError as exc:
        parser.exit(
            2, catalog.t("deploy.cli.cannot-export", reason=catalog.t(f"export.error.{exc.key}", **exc.params)) + "\n"
        )
    print(
        catalog.t("deploy.cli.export-written", path=done.path, rows=done.rows, columns=len(done.columns), lms=args.lms)
    )
    for title, points in done.columns:
        print(catalog.t("deploy.cli.export-column", title=title, points=f"{points:g}"))
    if done.sheet is not None:
        key, params = FORMATS[args.lms].next_step(done.sheet)
        print(catalog.t(f"deploy.cli.{key}", **params))
    for key, names in (
        ("export-unreadable", done.unreadable),
        ("export-unmatched", done.unmatched),
        ("export-not-submitted", done.not_submitted),
        ("export-altered", done.altered_ids),
        ("export-ambiguous", done.ambiguous),
        ("export-no-lms-id", done.no_lms_id),
        ("export-same-lms-id", done.same_lms_id),
        ("export-ambiguous-rows", done.ambiguous_rows),
    ):
        if names:
            print(catalog.t(f"deploy.cli.{key}", names=", ".join(names)))
    return 0


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "release": _release,
    "nbgrader": _nbgrader,
    "gradescope": _gradescope,
    "prairielearn": _prairielearn,
    "export": _export,
}
