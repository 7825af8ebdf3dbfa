"""What the grading platforms show of a report: the views of `grader.report.feedback` (the same
sections, checks, diagnoses, tables and heatmaps as feedback.html), laid out by each platform's
templates (templates/gradescope/, templates/prairielearn/, templates/nbgrader/) in the form that
platform renders best. Text comes from the catalogues; this module only picks what each check shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2

from grader.i18n import Catalog
from grader.report.feedback import CheckView, FeedbackView, SectionView
from grader.report.messages import Card
from grader.report.render import environment


def section_label(section: str, catalog: Catalog) -> str:
    """The book's name of a section as a short label: "3.5", or "Ex. 3.1" ("练习 3.1") for an exercise."""
    if section.startswith("ex"):
        return catalog.t("classroom.section-label.exercise", number=section[2:])
    return section


@dataclass
class CheckBlocks:
    """A failing check as a channel lays it out: its section, the check itself and the misconception
    cards of the causes its diagnosis names (their explanation goes with the check on platforms
    that show one check at a time). The error's place (`check.where`) and the diagnosis's line
    are never the same line: `report.diagnosis.diagnosis_view` drops the diagnosis's then."""

    section: SectionView
    check: CheckView
    cards: list[Card]
    label: str  # section_label of its section


def check_blocks(view: FeedbackView, catalog: Catalog) -> list[CheckBlocks]:
    """Every check of the report, in book order, with what a channel shows beside it."""
    cards = {card.id: card for card in view.cards}
    blocks = []
    for section in view.sections:
        for check in section.tests:
            causes = [c.id for c in check.diagnosis.causes] if check.diagnosis else []
            if check.misconception and check.misconception not in causes:
                causes.append(check.misconception)
            shown = [cards[c] for c in causes if c in cards] if not check.passed else []
            blocks.append(CheckBlocks(section, check, shown, section_label(section.id, catalog)))
    return blocks


def channel_template(catalog: Catalog, name: str) -> jinja2.Template:
    """A platform's template in the report's environment (`t`, the md/html/plain filters, heatmaps)."""
    return environment(catalog).get_template(name)


def channel_macros(catalog: Catalog, name: str) -> Any:
    """A platform template's macros (jinja2's types omit a template's macros: they are read as Any)."""
    return channel_template(catalog, name).module
