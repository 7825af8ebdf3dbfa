"""nbgrader's own feedback page speaks the course's language: a zh course renders nbgrader's
feedback template with its labels in Chinese ("Student's answer", "Test cell", "Score"), through the
nbconvert and nbgrader the kit installs."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from grader.classroom.nbgrader_course import create_course
from grader.classroom.nbgrader_feedback_page import LABELS, NBGRADER_TEMPLATES

ENGLISH = [english for _, english, _ in LABELS] + ["Score:"]


def graded_notebook() -> nbformat.NotebookNode:
    answer = nbformat.v4.new_code_cell("def softmax_naive(x):\n    return x.exp() / x.exp().sum()")
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "answer", "locked": False}
    test = nbformat.v4.new_code_cell("check_section('sec3_3_simple_attention', globals())")
    test.metadata["nbgrader"] = {"solution": False, "grade": True, "grade_id": "test", "points": 9, "score": 7}
    return nbformat.v4.new_notebook(cells=[answer, test])


def render(course: Path) -> str:
    """The feedback page as `nbgrader generate_feedback` renders it with the course's config."""
    config = runpy.run_path(str(course / "nbgrader_config.py"), init_globals={"get_config": _config})["c"]
    css = NBGRADER_TEMPLATES.parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    config.HTMLExporter.extra_template_paths = [str(css)]  # as nbgrader's GenerateFeedback sets it
    exporter = HTMLExporter(config=config)
    resources = {"nbgrader": {"notebook": "ch3_attention", "score": 7, "max_score": 9, "late_penalty": 0}}
    html, _ = exporter.from_notebook_node(graded_notebook(), resources=resources)
    return re.sub(r"<style.*?</style>|<script.*?</script>", "", html, flags=re.S)


def _config():
    from traitlets.config import Config

    return Config()


@pytest.fixture
def no_gradebook(monkeypatch):
    """Loading the course's config prepares nbgrader's gradebook: not needed to render a page."""
    import grader.classroom.nbgrader_env as env

    monkeypatch.setattr(env, "prepare_nbgrader", lambda path: str(Path(path).parent))


def test_a_chinese_course_renders_nbgraders_labels_in_chinese(tmp_path, no_gradebook):
    create_course(tmp_path / "course", lang="zh")
    page = render(tmp_path / "course")
    assert "测试单元格" in page and "得分：7" in page
    assert not [label for label in ENGLISH if label in page]


def test_an_english_course_keeps_nbgraders_own_page(tmp_path, no_gradebook):
    create_course(tmp_path / "course", lang="en")
    assert not (tmp_path / "course" / "nbgrader_templates").exists()
    assert "nbgrader_templates" not in (tmp_path / "course" / "nbgrader_config.py").read_text(encoding="utf-8")
