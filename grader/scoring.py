"""Scores: points per test, totals per section and overall."""
from __future__ import annotations

from grader.records import SECTIONS, SectionScore, TestOutcome


def section_scores(outcomes: list[TestOutcome], titles: dict[str, str]) -> list[SectionScore]:
    scores = []
    for section in SECTIONS:
        tests = [o for o in outcomes if o.section == section]
        scores.append(SectionScore(section, titles.get(section, section),
                                   sum(o.points for o in tests), sum(o.max_points for o in tests)))
    return scores


def total(outcomes: list[TestOutcome]) -> tuple[float, float]:
    return sum(o.points for o in outcomes), sum(o.max_points for o in outcomes)
