"""nbgrader's own feedback page in the course's language.

`nbgrader generate_feedback` renders each graded notebook with nbgrader's `feedback` template, whose
labels are English ("Student's answer", "Test cell", "Score: 3 / 4"). A course in another language
gets a copy of that template (the nbgrader installed with the kit: its markup, scripts and styles
as they are) with those labels in the course's language, from the message catalogues
(`classroom.nbgrader.page`), and its config renders feedback with it. A label the installed template
no longer carries is an error, so that a newer nbgrader can never leave a label untranslated.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbgrader

from grader.i18n import Catalog

NBGRADER_TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
FOLDER = "nbgrader_templates"  # in the course folder
# (the label's markup in the template, the label, the key of what stands in its place)
LABELS = (
    (">Student's answer<", "Student's answer", "student-answer"),
    (">Student's task<", "Student's task", "student-task"),
    (">Test cell</a>", "Test cell", "test-cell"),
    (">Coding free-response</a>", "Coding free-response", "coding-response"),
    (">Written response</a>", "Written response", "written-response"),
    (">Task</a>", "Task", "task"),
    (">Comment</a>", "Comment", "comment"),
    ("<b>Comments:</b>", "Comments:", "comments"),
    (">Late submission penalty", "Late submission penalty", "late-penalty"),
    (">Grade cell: <", "Grade cell: ", "grade-cell"),
    (">Task: <", "Task: ", "task-id"),
    ("(Top)", "(Top)", "top"),
)
SCORE = re.compile(r"\(Score: (-?\{\{[^}]*\}\}) / (\{\{[^}]*\}\})\)|Score: (\{\{[^}]*\}\}) / (\{\{[^}]*\}\})")


def template_name(lang: str) -> str:
    return f"feedback_{lang}"


def write_feedback_template(course_dir: Path, catalog: Catalog) -> Path:
    """The course's copy of nbgrader's feedback template, its labels in `catalog`'s language; returns
    the folder to give nbconvert as a template base directory."""
    source = NBGRADER_TEMPLATES / "feedback"
    text = (source / "index.html.j2").read_text(encoding="utf-8")
    for markup, english, key in LABELS:
        if markup not in text:
            raise ValueError(f"nbgrader's feedback template has no {markup!r}: its labels changed")
        text = text.replace(markup, markup.replace(english, catalog.t(f"classroom.nbgrader.page.{key}")))
    text = SCORE.sub(lambda m: _score(m, catalog), text)
    base = course_dir / FOLDER
    target = base / template_name(catalog.lang)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "conf.json", target / "conf.json")
    (target / "index.html.j2").write_text(text, encoding="utf-8")
    return base


def _score(match: re.Match, catalog: Catalog) -> str:
    got, of = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    key = "classroom.nbgrader.page.score-in-brackets" if match.group(1) else "classroom.nbgrader.page.score"
    return catalog.t(key, score=got, points=of)
