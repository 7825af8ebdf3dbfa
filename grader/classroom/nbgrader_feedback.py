"""The kit's feedback in nbgrader: under each test cell, its section's checks, each failing one with
its whole diagnosis (the views of feedback.html: the student's cell and line with the code, the step
that departs, the likely cause and its hint, expected and actual values, the attention weights)
after the notes on the notebook (a deleted cell put back, a section without code, what was repaired
in its nbgrader data, the files of the submission that were not copied);
above the notebook, in a cell of its own, where to go next and what probably went wrong. The test
cell's value is its points (nbgrader's partial credit). Layout: templates/nbgrader/."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from grader.classroom.feedback_channels import CheckBlocks, channel_template, check_blocks
from grader.classroom.nbgrader_repair import Repair
from grader.i18n import Catalog, section_key
from grader.records import MODULE_SECTIONS, GradeResult
from grader.report.feedback import FeedbackView, feedback_view
from grader.report.sentences import Said, say, student, trusted, words

OVERVIEW_ID = "attention-kit-overview"  # the id of the cell that holds the overview


@dataclass
class Note:
    """A note on the notebook above a section's checks (and the list that goes with it)."""

    text: Said
    items: list[str] = field(default_factory=list)


def _section_title(module: str, catalog: Catalog) -> Said:
    return words(catalog.t(section_key(MODULE_SECTIONS[module])))


def _message(block: CheckBlocks, result: GradeResult, missing: set[str], catalog: Catalog) -> Said:
    """The check's sentence; an import of a module the notebook has no code for, said of the notebook."""
    outcome = next((o for o in result.tests if o.id == block.check.id), None)
    error = outcome.error if outcome is not None else None
    if error is not None and error.key in ("import.missing", "import.missing-notebook"):
        module = (error.params or {}).get("module", error.module)
        if module in missing:
            return say(
                catalog,
                "classroom.nbgrader.module-missing-short",
                module=trusted(module),
                section=_section_title(module, catalog),
            )
    return block.check.message


def _notes(
    result: GradeResult,
    module: str,
    catalog: Catalog,
    missing: set[str],
    restored: bool,
    repairs: list[str],
    withheld: list[str],
) -> list[Note]:
    notes = []
    if repairs:
        notes.append(Note(words(catalog.t("classroom.nbgrader.repair.intro")), list(repairs)))
    if withheld:
        notes.append(Note(words(catalog.t("classroom.nbgrader.withheld.intro")), list(withheld)))
    if restored:
        notes.append(Note(words(catalog.t("classroom.nbgrader.cell-restored"))))
    if module in missing:
        section = _section_title(module, catalog)
        notes.append(Note(say(catalog, "classroom.nbgrader.module-missing", module=trusted(module), section=section)))
    for note in result.integrity:
        if note.kind.startswith("submission."):
            notes.append(Note(say(catalog, f"integrity.{note.kind}", detail=student(note.detail))))
    return notes


def cell_feedback_html(
    result: GradeResult,
    module: str,
    catalog: Catalog,
    *,
    view: FeedbackView | None = None,
    missing: Set[str] = frozenset(),
    restored: bool = False,
    repairs: Sequence[str] = (),
    withheld: Sequence[str] = (),
) -> str:
    """The kit's feedback for one module, as an HTML fragment for its test cell. `missing`: the
    modules the notebook defines no code for; `restored`: this test cell had been deleted;
    `repairs`: what was repaired in the notebook's nbgrader data, in words; `withheld`: the files of
    the submission not copied (links, pipes...), in words."""
    view = view or feedback_view(result, catalog)
    section_id = MODULE_SECTIONS[module]
    blocks = [b for b in check_blocks(view, catalog) if b.section.id == section_id and b.check.id.startswith(module)]
    section = next((s for s in view.sections if s.id == section_id), None)
    explained: dict[str, list[str]] = {}  # check -> the causes explained there (the first time in the cell)
    seen: set[str] = set()
    for block in blocks:
        explained[block.check.id] = [card.id for card in block.cards if card.id not in seen]
        seen |= {card.id for card in block.cards}
    return channel_template(catalog, "nbgrader/cell_feedback.html.j2").render(
        explained=explained,
        section={
            "title": section.title if section else catalog.t(section_key(section_id)),
            "score": section.score if section else 0.0,
            "max_score": section.max_score if section else 0.0,
        },
        notes=_notes(result, module, catalog, set(missing), restored, list(repairs), list(withheld)),
        blocks=blocks,
        messages={b.check.id: _message(b, result, set(missing), catalog) for b in blocks},
    )


def overview_html(view: FeedbackView, catalog: Catalog) -> str:
    """Where to go next and what probably went wrong, for the top of the notebook."""
    return channel_template(catalog, "nbgrader/overview.html.j2").render(view=view)


def section_result(result: GradeResult, module: str) -> tuple[float, float]:
    for section in result.sections:
        if section.id == MODULE_SECTIONS[module]:
            return float(section.score), float(section.max_score)
    return 0.0, 0.0


def partial_credit(result: GradeResult, module: str, points: float) -> float:
    """The test cell's points: the section's share of its hidden-test points."""
    score, max_score = section_result(result, module)
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
    result: GradeResult | None,
    module: str,
    points: float,
    catalog: Catalog,
    *,
    view: FeedbackView | None = None,
    missing: set[str],
    restored: bool,
    repairs: list[str],
    withheld: Sequence[str] = (),
) -> list:
    """A kit test cell's outputs: the kit's feedback and the cell's points as its value."""
    import nbformat

    if result is None:
        return [
            nbformat.v4.new_output(
                "error", ename="GraderError", evalue=catalog.t("classroom.nbgrader.grader-failed"), traceback=[]
            )
        ]
    credit = partial_credit(result, module, points)
    html = cell_feedback_html(
        result, module, catalog, view=view, missing=missing, restored=restored, repairs=repairs, withheld=withheld
    )
    score, max_score = section_result(result, module)
    summary = catalog.t("classroom.nbgrader.cell-summary", score=f"{score:g}", max_score=f"{max_score:g}")
    return [
        nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": summary}),
        nbformat.v4.new_output(
            "execute_result", data={"text/plain": repr(credit)}, execution_count=cell.get("execution_count") or 1
        ),
    ]


def number_code_cells(nb: Any) -> None:
    """Each code cell's prompt ("In [7]:" on nbgrader's feedback page) is its place among the
    notebook's code cells, the number the kit's report gives it ("code cell 7": markdown cells are
    not counted), whatever a kernel's run left there (nothing, when the kit alone runs the code)."""
    number = 0
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            number += 1
            cell["execution_count"] = number


def overview_cell(view: FeedbackView, catalog: Catalog, taken: Set[str] = frozenset()) -> Any:
    """A markdown cell holding the overview as one HTML block (no blank line, no indented line:
    Markdown leaves such a block as it is, and nbgrader's feedback page shows it); its id is not one
    of `taken` (the notebook's own cells' ids)."""
    import nbformat

    lines = [line.strip() for line in overview_html(view, catalog).splitlines()]
    cell = nbformat.v4.new_markdown_cell("\n".join(line for line in lines if line))
    cell["metadata"] = {"attention_kit": {"overview": True}}
    names = (OVERVIEW_ID if n == 0 else f"{OVERVIEW_ID}-{n}" for n in range(len(taken) + 1))
    cell["id"] = next(name for name in names if name not in taken)
    return cell


def _is_overview(cell: Any) -> bool:
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    if not isinstance(metadata, dict):
        return False
    kit = metadata.get("attention_kit")
    return (
        cell.get("cell_type") == "markdown"
        and isinstance(kit, dict)
        and kit.get("overview") is True
        and not metadata.get("nbgrader")
    )


def add_overview(nb: Any, view: FeedbackView, catalog: Catalog) -> None:
    """The overview as the notebook's second cell (after its title), in place of one an earlier
    autograde put there."""
    cells = [c for c in nb.cells if not _is_overview(c)]
    at = 1 if cells and cells[0].get("cell_type") == "markdown" else 0
    cells.insert(at, overview_cell(view, catalog, {str(c.get("id")) for c in cells}))
    nb.cells = cells
