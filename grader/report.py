"""Rendering: results.json, feedback.html/.md per submission; gradebook.csv and summary.html per class.

Python decides what to say (message keys and parameters); the catalogues say it and the
templates lay it out.
"""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jinja2

from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.records import MODULE_SECTIONS, GradeResult, ProbeError, TestOutcome


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def error_message(error: ProbeError, catalog: Catalog, blocked_by: str | None = None) -> str:
    """What went wrong in the student's code, in the student's terms."""
    params: dict[str, Any] = dict(error.params)
    params.setdefault("module", error.module)
    location = error.location
    if location:
        params |= {"file": location.file, "line": location.line, "code": location.code.strip()}
    params |= {"exc_type": error.exc_type, "exc_message": error.message}
    parts = []
    if blocked_by:
        section = MODULE_SECTIONS.get(blocked_by, "")
        parts.append(catalog.t("error.blocked-by", module=blocked_by, section=section,
                               section_title=catalog.t(section_key(section))))
    if error.key:
        parts.append(catalog.t(error.key, **params))
    elif location:
        parts.append(catalog.t(f"error.{error.kind}.located", **params))
    else:
        parts.append(catalog.t(f"error.{error.kind}.unlocated", **params))
    return " ".join(part for part in parts if part)


def outcome_message(outcome: TestOutcome, catalog: Catalog) -> str:
    if outcome.status == "passed":
        return ""
    if outcome.error is not None:
        return error_message(outcome.error, catalog, outcome.blocked_by)
    if outcome.detail is not None:
        params = dict(outcome.detail.params)
        for name in ("what", "on"):
            if params.get(name):
                params[name] = catalog.t(params[name])
        return catalog.t(outcome.detail.key, **params)
    return catalog.t(f"status.{outcome.status}")


def results_document(result: GradeResult, catalog: Catalog) -> dict:
    return {
        "submission": result.submission,
        "score": result.score,
        "max_score": result.max_score,
        "sections": [asdict(section) for section in result.sections],
        "tests": [
            {"id": o.id, "section": o.section, "points": o.points, "max_points": o.max_points,
             "status": o.status, "message": o.message, "misconception": o.misconception,
             "blocked_by": o.blocked_by}
            for o in result.tests
        ],
        "integrity": [asdict(note) for note in result.integrity],
        "content_hash": result.content_hash,
        "lang": catalog.lang,
    }


def environment(catalog: Catalog) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["t"] = catalog.t
    env.globals["lang"] = catalog.lang
    env.globals["sections"] = MODULE_SECTIONS
    return env


def write_submission_reports(result: GradeResult, out_dir: Path, catalog: Catalog,
                             misconceptions: dict[str, Any] | None = None) -> None:
    env = environment(catalog)
    context = {"result": result, "misconceptions": misconceptions or {}}
    write_atomic(out_dir / "feedback.html", env.get_template("feedback.html.j2").render(context))
    write_atomic(out_dir / "feedback.md", env.get_template("feedback.md.j2").render(context))
    # results.json last: its presence with a matching content hash means the folder is complete.
    write_atomic(out_dir / "results.json", json.dumps(results_document(result, catalog), indent=2, ensure_ascii=False))


def write_class_reports(results: list[GradeResult], out_dir: Path, catalog: Catalog,
                        misconceptions: dict[str, Any] | None = None) -> None:
    env = environment(catalog)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    section_ids = list(dict.fromkeys(MODULE_SECTIONS.values()))
    writer.writerow(["student", *section_ids, "total", "max_total", "integrity"])
    for result in sorted(results, key=lambda r: r.submission):
        scores = {s.id: s.score for s in result.sections}
        writer.writerow([result.submission, *[_number(scores.get(s, 0.0)) for s in section_ids],
                         _number(result.score), _number(result.max_score),
                         "; ".join(f"{n.kind}: {n.detail}" for n in result.integrity)])
    write_atomic(out_dir / "gradebook.csv", buffer.getvalue())
    context = {"results": sorted(results, key=lambda r: r.submission), "misconceptions": misconceptions or {},
               "section_ids": section_ids}
    write_atomic(out_dir / "summary.html", env.get_template("summary.html.j2").render(context))


def _number(value: float) -> str:
    return f"{value:g}"
