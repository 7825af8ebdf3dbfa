"""Every channel's Chinese, held to the book's terms (templates/i18n/glossary-zh.toml): feedback.md
and feedback.html, Gradescope's results, PrairieLearn's, nbgrader's cells, for every student of
examples/class and the untouched stubs graded with --lang zh. No word the book does not use for a
term, the book's title as the edition has it, full-width punctuation after Chinese text, no
English sentence with Chinese slotted in, Python's messages glossed in Chinese."""

from __future__ import annotations

import html as html_module
import re
import shutil
import tomllib

import pytest

from grader.classroom.deployment import Graded
from grader.classroom.gradescope import to_gradescope
from grader.classroom.nbgrader_feedback import cell_feedback_html, overview_html
from grader.classroom.prairielearn import to_prairielearn
from grader.i18n import TEMPLATES_DIR, Catalog
from grader.records import MODULES, GradeResult
from grader.report.feedback import feedback_view
from grader.run import grade
from tests.conftest import ROOT, stubs_as_submission
from tests.test_chinese import english_words

GLOSSARY = tomllib.loads((TEMPLATES_DIR / "i18n" / "glossary-zh.toml").read_text(encoding="utf-8"))["terms"]
CLASS = ROOT / "examples" / "class"
CJK = "\u4e00-\u9fff"
HALF_WIDTH_AFTER_CHINESE = re.compile(f"[{CJK}]( *<[^>]+>)* *[,;:?!]")  # tags between them too
NAMES = {"attention-kit", "qkv", "small", "inputs", "exp"}  # the kit, qkv_bias, GPT-2 small, `inputs`, exp()
TITLE = re.compile(r"《[^》]*》")


@pytest.fixture(scope="module")
def channels(tmp_path_factory) -> dict[str, str]:
    """(where, the Chinese text a student reads there), code and quoted output left out."""
    folder = tmp_path_factory.mktemp("class-zh")
    for student in sorted(p for p in CLASS.iterdir() if p.is_dir()):
        shutil.copytree(student, folder / student.name)
    stubs_as_submission(folder / "stubs")
    out = tmp_path_factory.mktemp("reports-zh")
    results: list[GradeResult] = grade(folder, out, jobs=2, lang="zh", force=True).results
    catalog = Catalog("zh")
    texts: dict[str, str] = {}
    for result in results:
        name = result.submission
        texts[f"{name}/feedback.md"] = _markdown_prose((out / name / "feedback.md").read_text(encoding="utf-8"))
        texts[f"{name}/feedback.html"] = _html_prose((out / name / "feedback.html").read_text(encoding="utf-8"))
        gradescope = to_gradescope(result, catalog)
        texts[f"{name}/gradescope"] = _markdown_prose(
            "\n\n".join([gradescope["output"], *(t["output"] for t in gradescope["tests"])])
        )
        prairielearn = to_prairielearn(Graded({}, "", result), catalog)
        parts = [prairielearn["message"], prairielearn["output"]]
        parts += [t[key] for t in prairielearn["tests"] for key in ("message", "output")]
        texts[f"{name}/prairielearn"] = _plain_prose("\n\n".join(parts))
        view = feedback_view(result, catalog)
        cells = [cell_feedback_html(result, module, catalog, view=view) for module in MODULES]
        texts[f"{name}/nbgrader"] = _html_prose("\n".join([overview_html(view, catalog), *cells]))
    return texts


def _markdown_prose(text: str) -> str:
    text = re.sub(r"^( *)(`{3,}).*?^\1\2", " ", text, flags=re.S | re.M)  # fenced blocks
    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", " ", text)  # code spans
    return text.replace("\\", "")


def _html_prose(text: str) -> str:
    text = re.sub(r"<(style|pre|code|svg|script|title)\b.*?</\1>", " ", text, flags=re.S)
    return html_module.unescape(re.sub(r"<[^>]+>", " ", text))


def _plain_prose(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("    "))  # code, values


def test_every_channel_says_the_books_terms(channels):
    for where, text in channels.items():
        wrong = [word for spec in GLOSSARY.values() for word in spec.get("avoid", []) if word in text]
        assert wrong == [], f"{where}: {wrong}"
        titles = set(TITLE.findall(text)) - {"《从零构建大模型》"}
        assert titles == set(), f"{where}: {titles}"


def test_every_channel_puts_full_width_punctuation_after_chinese(channels):
    for where, text in channels.items():
        found = sorted({m.group() for m in HALF_WIDTH_AFTER_CHINESE.finditer(text)})
        assert found == [], f"{where}: {found}"


def test_no_english_sentence_carries_chinese(channels):
    """Chinese words slotted into an English sentence ("应为 不变"): an English word next to Chinese."""
    for where, text in channels.items():
        lines = [re.sub(r"“[^”\n]*”", " ", line) for line in text.splitlines() if re.search(f"[{CJK}]", line)]
        english = sorted({w for line in lines for w in english_words(line)} - NAMES)
        assert english == [], f"{where}: {english[:12]}"


def test_pythons_message_is_glossed_in_chinese(channels):
    gloss = Catalog("zh").t("python-errors.gloss.expected-colon")
    prose = re.sub(r"`[^`]*`", " ", gloss).split()[0]
    for channel in ("feedback.md", "feedback.html", "gradescope", "prairielearn"):
        assert prose in channels[f"dave/{channel}"], channel
