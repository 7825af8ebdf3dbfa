"""The class overview a TA works from (summary.html): the per-student table first, with what to act
on for each student in a word or two, each name linking to that student's feedback; then which
students each misconception was found in and each check's pass rate; a title that names the
assignment; no sentence addressed to a student; no label repeated or cut."""

from __future__ import annotations

import dataclasses
import re
import shutil
from html.parser import HTMLParser

import nbformat
import pytest

from grader.i18n import Catalog
from grader.records import IntegrityNote, LmsIdentity
from grader.report.student_status import student_status
from grader.run import grade
from tests.conftest import ROOT, stubs_as_submission


@pytest.fixture(scope="module")
def overview(tmp_path_factory):
    base = tmp_path_factory.mktemp("overview")
    klass = shutil.copytree(ROOT / "examples" / "class", base / "class")
    stubs_as_submission(klass / "stubs")
    (klass / "gina").mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def my_attention(x):\n    return x")])
    nbformat.write(notebook, klass / "gina" / "homework.ipynb")
    pages = {}
    for lang in ("en", "zh"):
        summary = grade(klass, base / lang, jobs=1, force=True, lang=lang)
        pages[lang] = (summary, (base / lang / "summary.html").read_text(encoding="utf-8"))
    return pages


class _Table(HTMLParser):
    """The student table's rows: the text of each cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tables = 0
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        elif self.tables == 1 and tag == "tr":
            self.rows.append([])
        elif self.tables == 1 and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def statuses(page: str) -> dict[str, str]:
    table = _Table()
    table.feed(page)
    return {row[0]: row[1] for row in table.rows[1:]}


def test_each_student_has_one_thing_to_act_on_first(overview):
    _, page = overview["en"]
    assert statuses(page) == {
        "alice": "all checks pass",
        "bob": "checks fail in 3.3, 3.4",
        "carol": "checks fail in 3.5, 3.6",
        "dave": "syntax error in 3.5, line 41",
        "erin": "not started: 3.5, 3.6, ex3.1, ex3.2, ex3.3",
        "frank": "checks fail in 3.6, ex3.1",
        "gina": "notebook not recognised",
        "stubs": "untouched stubs",
    }


def test_the_chinese_overview_says_the_same_in_chinese(overview):
    _, page = overview["zh"]
    said = statuses(page)
    assert said["dave"] == "3.5 第 41 行有语法错误" and said["stubs"] == "尚未改动桩代码"
    assert said["gina"] == "未能识别笔记本" and said["alice"] == "全部检查通过"


def test_the_table_comes_first_and_every_name_links_to_its_feedback(overview):
    summary, page = overview["en"]
    assert page.index('<table class="grid sortable">') < page.index("<svg")
    for result in summary.results:
        assert f'<a href="{result.folder}/feedback.html">' in page
    assert page.count('<button type="button">') == 3 + 7  # student, status, total and each section sort


def test_the_misconceptions_say_which_students(overview):
    _, page = overview["en"]
    item = re.search(r"<li><strong>Heads merged without transposing back</strong>(.*?)</li>", page)
    assert item and '<a href="carol/feedback.html">carol</a>' in item.group(1)


def test_the_title_names_the_assignment_and_no_sentence_addresses_a_student(overview):
    for lang, (_, page) in overview.items():
        title = re.search(r"<title>(.*?)</title>", page).group(1)
        assert ("Coding Attention Mechanisms" if lang == "en" else "编码注意力机制") in title
    _, page = overview["en"]
    text = re.sub(r"<[^>]+>", " ", page.split("<body>")[1].split("<script>")[0])
    assert not re.search(r"\byour?\b", text, re.I)


def test_no_label_is_repeated_or_cut(overview):
    for _, page in overview.values():
        text = re.sub(r"<[^>]+>", " ", page.split("<body>")[1].split("<script>")[0])
        assert "…" not in text
        assert not re.search(r"\b(3\.[3-6]) \1\b", text)  # "3.3 3.3 Attention ..."
        assert "sa_v1" not in text  # a check named by a variable of the student's


def test_late_and_uploaded_again_are_said_after_what_to_fix(overview):
    summary, _ = overview["en"]
    bob = next(result for result in summary.results if result.submission == "bob")
    intake = dataclasses.replace(
        bob.intake,
        identity=LmsIdentity("canvas", "5102", "jonesbob", late=True),
        remarks=(IntegrityNote("reuploaded", "ch3-2.ipynb (ch3.ipynb, ch3-1.ipynb, ch3-2.ipynb)"),),
    )
    said = [status.text for status in student_status(dataclasses.replace(bob, intake=intake), Catalog("en"))]
    assert said == ["checks fail in 3.3, 3.4", "late", "uploaded again"]
