"""Writing the reports: results.json, feedback.html/.md per submission; gradebook.csv and summary.html
per class. Writing never fails because of what a student's data holds: text that cannot be encoded
is escaped, a page that cannot be rendered is replaced by a plainer one (with a note saying so)."""

from __future__ import annotations

import csv
import io
import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.i18n import Catalog
from grader.intake.printable import printable
from grader.records import SECTIONS, GradeResult, IntegrityNote, TestOutcome
from grader.report import results_file
from grader.report.render import render_feedback, render_summary
from grader.report.sentences import number
from grader.report.textsafe import spreadsheet_cell

log = logging.getLogger("grader.report")


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one.
    Characters UTF-8 cannot encode (lone surrogates) are written as backslash escapes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_submission_reports(result: GradeResult, out_dir: Path, catalog: Catalog) -> GradeResult:
    """feedback.html, feedback.md and results.json in `out_dir`. When the full pages cannot be
    rendered, plainer ones are written and the result gains a note (`report.failed`); the result
    as written is returned."""
    try:
        html, markdown = render_feedback(result, catalog)
    except Exception as exc:
        log.exception("feedback of %s could not be rendered", printable(result.submission))
        result = _with_note(result, IntegrityNote("report.failed", type(exc).__name__))
        html, markdown = _plain_pages(result, catalog)
    write_atomic(out_dir / "feedback.html", html)
    write_atomic(out_dir / "feedback.md", markdown)
    # results.json last: its presence with a matching content hash means the folder is complete.
    write_atomic(out_dir / results_file.NAME, results_file.results_json(result, catalog))
    return result


def _with_note(result: GradeResult, note: IntegrityNote) -> GradeResult:
    return replace(result, integrity=list(result.integrity) + [note])


def _plain_pages(result: GradeResult, catalog: Catalog) -> tuple[str, str]:
    """The report without anything that came back from the student's code (no details, errors,
    heatmaps): each test with its status only. If even that fails, a page of escaped text."""
    reduced = replace(
        result,
        heatmaps=[],
        tests=[
            TestOutcome(
                o.id, o.module, o.name, o.section, o.status, o.points, o.max_points, misconception=o.misconception
            )
            for o in result.tests
        ],
    )
    try:
        return render_feedback(reduced, catalog)
    except Exception:
        log.exception("plain feedback of %s could not be rendered either", printable(result.submission))
    lines = [
        catalog.t("report.title", name=printable(result.submission)),
        f"{number(result.score)} / {number(result.max_score)} {catalog.t('report.points')}",
        catalog.t("integrity.report.failed", detail=""),
    ]
    import html as html_module

    page = '<!doctype html><meta charset="utf-8">' + "".join(f"<p>{html_module.escape(line)}</p>" for line in lines)
    return page, "\n\n".join(f"    {line}" for line in lines) + "\n"


def gradebook_csv(results: list[GradeResult]) -> str:
    """One row per student (as shown), one column per section, total; for a class graded from an
    LMS's bulk download, the student's LMS, id and name there, and whether it was late; and, last,
    the folder of the student's reports; every text cell inert in a spreadsheet (a folder's name
    never needs a change: grader.intake.names)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    section_ids = list(SECTIONS)
    writer.writerow(
        [
            "student",
            *section_ids,
            "total",
            "max_total",
            "track",
            "integrity",
            "lms",
            "lms_id",
            "lms_name",
            "late",
            "folder",
        ]
    )
    for result in sorted(results, key=lambda r: r.submission):
        scores = {s.id: s.score for s in result.sections}
        notes = "; ".join(f"{n.kind}: {n.detail}" for n in result.integrity)
        who = result.intake.identity
        writer.writerow(
            [
                spreadsheet_cell(result.submission),
                *[_score(scores.get(s, 0.0)) for s in section_ids],
                _score(result.score),
                _score(result.max_score),
                spreadsheet_cell(result.track),
                spreadsheet_cell(notes),
                *(
                    [spreadsheet_cell(who.lms), spreadsheet_cell(who.user_id), spreadsheet_cell(who.name)]
                    if who is not None
                    else ["", "", ""]
                ),
                "late" if who is not None and who.late else "",
                spreadsheet_cell(result.folder or ""),  # last, as always: scripts read it there
            ]
        )
    return buffer.getvalue()


def _score(value: Any) -> str:
    return number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "0"


def write_class_reports(results: list[GradeResult], out_dir: Path, catalog: Catalog) -> None:
    """gradebook.csv (always) and summary.html. A student whose row cannot be shown in the summary
    is left out of it (the gradebook still has the row) rather than costing the class its summary."""
    write_atomic(out_dir / "gradebook.csv", gradebook_csv(results))
    try:
        page = render_summary(results, catalog)
    except Exception:
        log.exception("the class summary could not be rendered; retrying without the rows that fail")
        shown_results = []
        for result in results:
            try:
                render_summary([result], catalog)
                shown_results.append(result)
            except Exception:  # noqa: BLE001
                log.error("left out of summary.html: %s", printable(result.submission))
        page = render_summary(shown_results, catalog)
    write_atomic(out_dir / "summary.html", page)
