"""Subcommands of `grade` other than grading itself (release, nbgrader, gradescope)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from grader.i18n import LANGUAGES, Catalog


def _release(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade release",
                                     description="Write the student bundle: stubs, README and public self-checks.")
    parser.add_argument("out", type=Path, help="folder to write the bundle to")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="default language of README and check.py")
    parser.add_argument("--force", action="store_true", help="write into an existing non-empty folder")
    parser.add_argument("--framework", choices=("pytorch", "mindspore"), default="pytorch",
                        help="the stubs and self-check of the PyTorch track (default) or the MindSpore track")
    args = parser.parse_args(argv)
    from grader.classroom.release import ReleaseError, write_release

    try:
        files = write_release(args.out, lang=args.lang, force=args.force, framework=args.framework)
    except ReleaseError as exc:
        parser.exit(2, f"grade release: {exc}\n")
    print(Catalog(args.lang).t("cli.release-written", count=len(files), path=args.out))
    return 0


def _nbgrader(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade nbgrader",
                                     description="Create an nbgrader course for Chapter 3, graded by this kit.")
    parser.add_argument("course_dir", type=Path, help="the nbgrader course root to create")
    parser.add_argument("--assignment", default="ch3", help="assignment name (default: ch3)")
    parser.add_argument("--course-id", default="attention-kit-ch3")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the notebook and feedback")
    parser.add_argument("--run-student-kernel", action="store_true",
                        help="autograde also runs each notebook in a Jupyter kernel so that feedback shows the "
                             "students' outputs (that kernel is not sandboxed; scores still come from the kit)")
    args = parser.parse_args(argv)
    from grader.classroom.nbgrader_course import create_course

    notebook = create_course(args.course_dir, assignment=args.assignment, course_id=args.course_id, lang=args.lang,
                             run_student_kernel=args.run_student_kernel)
    catalog = Catalog(args.lang)
    print(catalog.t("cli.course-written", config=args.course_dir / "nbgrader_config.py", notebook=notebook))
    print(catalog.t("cli.course-next", course=args.course_dir, assignment=args.assignment))
    return 0


def _gradescope(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade gradescope",
                                     description="Build a Gradescope autograder zip that grades with this kit.")
    parser.add_argument("out", type=Path, help="the zip file to write, e.g. autograder.zip")
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="language of the students' feedback")
    from grader.classroom.gradescope import VISIBILITIES, build_autograder_zip

    parser.add_argument("--visibility", default="visible", choices=VISIBILITIES,
                        help="when students see each test's result (Gradescope's visibility)")
    args = parser.parse_args(argv)
    path = build_autograder_zip(args.out, lang=args.lang, visibility=args.visibility)
    print(Catalog(args.lang).t("cli.file-written", path=path))
    return 0


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "release": _release,
    "nbgrader": _nbgrader,
    "gradescope": _gradescope,
}
