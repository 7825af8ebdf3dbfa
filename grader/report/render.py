"""Rendering and writing: jinja2 environments, results.json, feedback.html/.md, gradebook.csv, summary.html."""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from grader.i18n import TEMPLATES_DIR, Catalog
from grader.records import MODULE_SECTIONS, SECTIONS, GradeResult
from grader.report.feedback import feedback_view, results_document
from grader.report.heatmaps import Grid
from grader.report.summary import class_view



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



def _fit(text: Any, width: float, font: float = 11.0) -> str:
    """`text` cut (with an ellipsis) to about `width` pixels of SVG text: wide (CJK) characters count double."""
    text = str(text)

    def size(char: str) -> float:
        return font * (1.0 if unicodedata.east_asian_width(char) in "WF" else 0.56)

    if sum(size(c) for c in text) <= width:
        return text
    used, out = size("…"), []
    for char in text:
        used += size(char)
        if used > width:
            break
        out.append(char)
    return "".join(out).rstrip() + "…"


def _num(value: float) -> str:
    return f"{value:g}"


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def environment(catalog: Catalog) -> jinja2.Environment:
    """The jinja2 environment of the catalogue's language, built (and its templates compiled) once."""
    return _environment(catalog.lang)


@lru_cache(maxsize=None)
def _environment(lang: str) -> jinja2.Environment:
    catalog = Catalog(lang)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # compiled once per run: no stat() of every template at every page
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["t"] = catalog.t
    env.globals["lang"] = catalog.lang
    env.globals["sections"] = MODULE_SECTIONS
    env.globals["attention_grid"] = lambda grid, tokens, query, key: _attention_grid(lang, grid, tuple(tokens),
                                                                                    query, key)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    env.filters["md"] = _markdown_escape
    env.filters["fit"] = _fit
    return env


@lru_cache(maxsize=1024)
def _attention_grid(lang: str, grid: Grid, tokens: tuple[str, ...], query_label: str, key_label: str) -> Markup:
    """A heatmap drawn by the attention_grid macro of templates/_svg.html.j2, once per distinct grid.

    Drawing a grid is most of a feedback page's rendering time, and grids repeat: every student's
    page shows the same reference grids, and correct submissions draw identical ones of their own.
    """
    macro = _environment(lang).get_template("_svg.html.j2").module.attention_grid
    return Markup(macro(grid, list(tokens), query_label, key_label))


def _markdown_escape(text: Any) -> str:
    """Text safe inside a Markdown paragraph or table cell."""
    text = str(text).replace("\\", "\\\\")
    for char in "|*_`<>[]":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def render_feedback(result: GradeResult, catalog: Catalog) -> tuple[str, str]:
    """feedback.html and feedback.md for one submission."""
    env = environment(catalog)
    context = {"view": feedback_view(result, catalog)}
    return (env.get_template("feedback.html.j2").render(context),
            env.get_template("feedback.md.j2").render(context))


def render_summary(results: list[GradeResult], catalog: Catalog) -> str:
    env = environment(catalog)
    return env.get_template("summary.html.j2").render({"view": class_view(results, catalog)})


def write_submission_reports(result: GradeResult, out_dir: Path, catalog: Catalog) -> None:
    html, markdown = render_feedback(result, catalog)
    write_atomic(out_dir / "feedback.html", html)
    write_atomic(out_dir / "feedback.md", markdown)
    # results.json last: its presence with a matching content hash means the folder is complete.
    write_atomic(out_dir / "results.json", json.dumps(results_document(result, catalog), indent=2, ensure_ascii=False))


def write_class_reports(results: list[GradeResult], out_dir: Path, catalog: Catalog) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    section_ids = list(SECTIONS)
    writer.writerow(["student", *section_ids, "total", "max_total", "track", "integrity"])
    for result in sorted(results, key=lambda r: r.submission):
        scores = {s.id: s.score for s in result.sections}
        writer.writerow([result.submission, *[_num(scores.get(s, 0.0)) for s in section_ids],
                         _num(result.score), _num(result.max_score), result.track,
                         "; ".join(f"{n.kind}: {n.detail}" for n in result.integrity)])
    write_atomic(out_dir / "gradebook.csv", buffer.getvalue())
    write_atomic(out_dir / "summary.html", render_summary(results, catalog))

