"""The kit's feedback in an nbgrader test cell: the section's checks and score, the notes on the
notebook (a deleted cell put back, a section without code, what was repaired in its nbgrader data,
the files of the submission that were not copied),
and the cell's points as its value (nbgrader's partial credit)."""

from __future__ import annotations

from collections.abc import Sequence, Set
from functools import cache
from typing import Any

from grader.classroom.nbgrader_repair import Repair
from grader.i18n import TEMPLATES_DIR, Catalog, section_key
from grader.records import MODULE_SECTIONS


@cache
def _cell_environment(lang: str) -> Any:
    """The jinja2 environment of the test cells' feedback, built once per language (not per cell)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined, autoescape=True
    )
    env.globals["t"] = Catalog(lang).t
    return env


def _in_notebook_terms(message: str, missing: set[str], catalog: Catalog) -> str:
    """A test message about a module the notebook does not define, said of the notebook, not of a .py file."""
    for module in sorted(missing):
        for key in ("import.missing", "import.missing-notebook"):
            said = catalog.t(key, module=module)
            if said in message:
                message = message.replace(
                    said,
                    catalog.t(
                        "classroom.nbgrader.module-missing-short",
                        module=module,
                        section=catalog.t(section_key(MODULE_SECTIONS[module])),
                    ),
                )
    return message


def cell_feedback_html(
    document: dict[str, Any],
    module: str,
    catalog: Catalog,
    *,
    missing: Set[str] = frozenset(),
    restored: bool = False,
    repairs: Sequence[str] = (),
    withheld: Sequence[str] = (),
) -> str:
    """The kit's feedback for one module, as an HTML fragment for a notebook cell. `missing`: the
    modules the notebook defines no code for; `restored`: this test cell had been deleted;
    `repairs`: what was repaired in the notebook's nbgrader data, in words; `withheld`: the files of
    the submission not copied (links, pipes...), in words."""
    env = _cell_environment(catalog.lang)
    tests = []
    for test in document.get("tests", []):
        if test["id"].split("::")[0] != module:
            continue
        title_key = f"tests.{test['id']}.title"
        test = {**test, "message": _in_notebook_terms(test.get("message") or "", set(missing), catalog)}
        tests.append(
            {
                **test,
                "title": catalog.t(title_key) if catalog.has(title_key) else test["id"].split("::")[-1],
                "misconception_text": catalog.t(f"misconceptions.{test['misconception']}.title")
                if test.get("misconception") and catalog.has(f"misconceptions.{test['misconception']}.title")
                else test.get("misconception"),
            }
        )
    section = next(
        (s for s in document.get("sections", []) if s["id"] == MODULE_SECTIONS[module]),
        {"score": 0.0, "max_score": 0.0, "title": catalog.t(section_key(MODULE_SECTIONS[module]))},
    )
    integrity = [n for n in document.get("integrity", []) if n["kind"].startswith("submission.")]
    return env.get_template("nbgrader/cell_feedback.html.j2").render(
        module=module,
        section=section,
        tests=tests,
        integrity=integrity,
        restored=restored,
        module_missing=module in missing,
        repairs=list(repairs),
        withheld=list(withheld),
    )


def section_result(document: dict[str, Any], module: str) -> tuple[float, float]:
    for section in document.get("sections", []):
        if section["id"] == MODULE_SECTIONS[module]:
            return float(section["score"]), float(section["max_score"])
    return 0.0, 0.0


def partial_credit(document: dict[str, Any], module: str, points: float) -> float:
    """The test cell's points: the section's share of its hidden-test points."""
    score, max_score = section_result(document, module)
    if max_score <= 0 or points <= 0:
        return 0.0
    return round(points * min(score, max_score) / max_score, 4)


def repair_text(repair: Repair, catalog: Catalog) -> str:
    """One repair of the notebook's nbgrader data, in words."""
    return catalog.t(
        f"classroom.nbgrader.repair.{repair.kind}", cell=repair.cell, grade_id=repair.grade_id, detail=repair.detail
    )


def test_outputs(
    cell: Any,
    document: dict[str, Any] | None,
    module: str,
    points: float,
    catalog: Catalog,
    *,
    missing: set[str],
    restored: bool,
    repairs: list[str],
    withheld: Sequence[str] = (),
) -> list:
    """A kit test cell's outputs: the kit's feedback and the cell's points as its value."""
    import nbformat

    if document is None:
        return [
            nbformat.v4.new_output(
                "error", ename="GraderError", evalue=catalog.t("classroom.nbgrader.grader-failed"), traceback=[]
            )
        ]
    credit = partial_credit(document, module, points)
    html = cell_feedback_html(
        document, module, catalog, missing=missing, restored=restored, repairs=repairs, withheld=withheld
    )
    score, max_score = section_result(document, module)
    summary = catalog.t("classroom.nbgrader.cell-summary", score=f"{score:g}", max_score=f"{max_score:g}")
    return [
        nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": summary}),
        nbformat.v4.new_output(
            "execute_result", data={"text/plain": repr(credit)}, execution_count=cell.get("execution_count") or 1
        ),
    ]
