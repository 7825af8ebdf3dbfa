"""The table of checks in docs/grading-policy.md, made from the hidden suites and the English
message catalogue, so the page always lists every check with its points and the earlier checks
whose code it runs.

    .venv/bin/python tools/grading_policy_table.py          # print the table
    .venv/bin/python tools/grading_policy_table.py --write  # put it into docs/grading-policy.md
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from grader.records import MODULE_SECTIONS
from grader.resources import TEMPLATES_DIR
from grader.suites.hidden_suites import SuiteItem, collect

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "grading-policy.md"
START, END = "<!-- checks: start (made by tools/grading_policy_table.py) -->", "<!-- checks: end -->"


def english_titles() -> dict[str, str]:
    titles: dict[str, str] = {}
    for catalogue in sorted((TEMPLATES_DIR / "i18n" / "en").glob("*.toml")):
        tests = tomllib.loads(catalogue.read_text(encoding="utf-8")).get("tests", {})
        titles.update({test_id: entry["title"] for test_id, entry in tests.items() if "title" in entry})
    return titles


def table(items: list[SuiteItem], titles: dict[str, str]) -> str:
    """One Markdown table per section: each check once (a parametrised check sums its cases)."""
    lines: list[str] = []
    for module, section in MODULE_SECTIONS.items():
        checks: dict[str, list[SuiteItem]] = {}
        for item in items:
            if item.module == module:
                checks.setdefault(item.id.split("[")[0], []).append(item)
        total = sum(item.max_points for cases in checks.values() for item in cases)
        lines += [
            f"### {section} `{module}` ({total:g} points)",
            "",
            "| check | points | runs the code of |",
            "|---|---|---|",
        ]
        for check_id, cases in checks.items():
            uses = sorted({used.split("::")[1].split("[")[0] for item in cases for used in item.uses})
            used = ", ".join(f"`{name}`" for name in uses) or "—"
            if uses and any(item.judged_on_own for item in cases):
                used += " (judged against what the student's own code gives)"
            points = sum(item.max_points for item in cases)
            lines.append(f"| `{check_id.split('::')[1]}`: {titles.get(check_id, '')} | {points:g} | {used} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def current_table() -> str:
    return table(collect().infos, english_titles())


def page_with(text: str, made: str) -> str:
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n\n{made}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the table into {PAGE.relative_to(ROOT)}")
    made = current_table()
    if not parser.parse_args().write:
        print(made, end="")
        return 0
    PAGE.write_text(page_with(PAGE.read_text(encoding="utf-8"), made), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
