"""Rendering: the jinja2 environments and the pages (feedback.html/.md, summary.html)."""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from grader.i18n import TEMPLATES_DIR, Catalog
from grader.records import MODULE_SECTIONS, GradeResult
from grader.report.feedback import feedback_view
from grader.report.heatmaps import Grid
from grader.report.sentences import code_span, fenced, html, markdown, number, plain, say
from grader.report.summary import class_view


def _fit(text: Any, width: float, font: float = 11.0) -> str:
    """`text` cut (with an ellipsis) to about `width` pixels of SVG text: wide (CJK) characters count double."""
    text = plain(text)

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


def _num(value: Any) -> str:
    return number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else plain(value)


def _pct(value: float) -> str:
    try:
        return f"{min(max(float(value), 0.0), 1.0) * 100:.0f}%"
    except (TypeError, ValueError, OverflowError):
        return "0%"


def environment(catalog: Catalog) -> jinja2.Environment:
    """The jinja2 environment of the catalogue's language, built (and its templates compiled) once."""
    return _environment(catalog.lang)


@cache
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
    # t() gives a Said: autoescaping shows it as HTML (backtick spans as <code>, the student's text
    # as <code class="student">), the md filter as Markdown, the plain filter as bare text.
    env.globals["t"] = lambda key, **params: say(catalog, key, **params)
    env.globals["lang"] = catalog.lang
    env.globals["sections"] = MODULE_SECTIONS
    env.globals["attention_grid"] = lambda grid, tokens, query, key: _attention_grid(
        lang, grid, tuple(tokens), query, key
    )
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    env.filters["md"] = markdown
    env.filters["html"] = html
    env.filters["plain"] = plain
    env.filters["md_block"] = lambda text, indent="": fenced(str(text), indent)
    env.filters["md_code"] = lambda text: code_span(str(text)) if text else ""
    env.filters["fit"] = _fit
    return env


@lru_cache(maxsize=1024)
def _attention_grid(lang: str, grid: Grid, tokens: tuple[str, ...], query_label: str, key_label: str) -> Markup:
    """A heatmap drawn by the attention_grid macro of templates/_svg.html.j2, once per distinct grid.

    Drawing a grid is most of a feedback page's rendering time, and grids repeat: every student's
    page shows the same reference grids, and correct submissions draw identical ones of their own.
    """
    module = _environment(lang).get_template("_svg.html.j2").module
    macro = module.attention_grid  # type: ignore[attr-defined]  # jinja2's types omit a template's macros
    return Markup(macro(grid, list(tokens), query_label, key_label))


def render_feedback(result: GradeResult, catalog: Catalog) -> tuple[str, str]:
    """feedback.html and feedback.md for one submission."""
    env = environment(catalog)
    context = {"view": feedback_view(result, catalog)}
    return (env.get_template("feedback.html.j2").render(context), env.get_template("feedback.md.j2").render(context))


def render_summary(results: list[GradeResult], catalog: Catalog) -> str:
    env = environment(catalog)
    return env.get_template("summary.html.j2").render({"view": class_view(results, catalog)})
