"""The `grade` command."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader import commands
from grader.i18n import LANGUAGES, Catalog
from grader.intake.discovery import DiscoveryError
from grader.intake.printable import printable
from grader.quick_exit import exit_now


def _grade_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade",
        description="Grade Chapter 3 submissions: one submission folder, or a class folder of student folders.",
        epilog="Other commands: grade release OUT | grade nbgrader COURSE_DIR | grade gradescope OUT.zip | "
        "grade prairielearn OUT | grade export REPORTS --lms canvas|moodle|blackboard|brightspace",
    )
    parser.add_argument("path", type=Path, help="a submission folder, or a folder of student folders")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="where reports go (default: reports/)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="at most N submissions graded in parallel (default: the number of cores; fewer for a small class)",
    )
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help="report language (en or zh)")
    parser.add_argument("--force", action="store_true", help="regrade submissions whose reports are up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `grade` command; without `argv` (the command itself, not a caller in Python) the process
    ends as soon as grading is done (`exit_now`)."""
    command = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in commands.SUBCOMMANDS:
        return commands.SUBCOMMANDS[argv[0]](argv[1:])
    args = _grade_parser().parse_args(argv)
    if args.jobs < 1:
        _grade_parser().error("--jobs must be at least 1")
    code = run_grade(args)
    return exit_now(code) if command else code


def run_grade(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grader.run import GraderError, grade  # the grading run and its sandbox: not loaded by the subcommands

    catalog = Catalog(args.lang)
    # Printed text holds names from submissions: never read as rich markup ("[/]" would raise).
    console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False, emoji=False)
    progress = Progress(
        TextColumn(catalog.t("cli.progress")),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=args.quiet,
    )
    task = progress.add_task("grading", total=None)
    try:
        with progress:
            summary = grade(
                args.path,
                args.out,
                jobs=args.jobs,
                lang=args.lang,
                force=args.force,
                on_progress=lambda done, count: progress.update(task, completed=done, total=count),
            )
    except DiscoveryError as exc:
        console.print(catalog.t("cli.cannot-run", reason=catalog.t(exc.key, **exc.params)))
        return 2
    except GraderError as exc:
        console.print(catalog.t("cli.cannot-run", reason=str(exc)))
        return 2
    for note in summary.protections:
        console.print(catalog.t("cli.protection-missing", what=catalog.t(f"integrity.{note.kind}", detail=note.detail)))
    out = Console(soft_wrap=True, markup=False, highlight=False, emoji=False)
    if summary.is_class:
        out.print(
            catalog.t(
                "cli.class-done",
                count=len(summary.results),
                graded=summary.graded,
                reused=summary.reused,
                seconds=f"{summary.seconds:.1f}",
            )
        )
    else:
        result = summary.results[0]
        out.print(
            catalog.t(
                "cli.submission-done",
                name=printable(result.submission),
                score=f"{result.score:g}",
                max_score=f"{result.max_score:g}",
                seconds=f"{summary.seconds:.1f}",
            )
        )
    out.print(catalog.t("cli.report-at", path=str(summary.report_path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
