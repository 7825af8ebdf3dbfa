"""`grade prairielearn OUT`: a ready PrairieLearn question and the recipe of its grading image.

OUT/questions/<id>/      copy into the course's questions/ folder
    info.json            "gradingMethod": "External", "externalGradingOptions" (image, entrypoint, timeout)
    question.html        the seven modules as file editors (the stubs to start from), or one upload
                         field for the .py files or notebooks; the grader's results below
    tests/attention-kit.json   the feedback's language, read by the entrypoint (/grade/tests)
    stubs/               (editors only) the stubs the editors start from
OUT/grader-image/        `docker build` context of the image named in info.json
    Dockerfile           Python 3.11, bubblewrap, torch (pinned, CPU), the kit's dependencies; the kit's
                         wheel installed in /opt/attention-kit (pip --target), outside site-packages,
                         readable by root only
    requirements.txt     the kit's runtime dependencies (from pyproject.toml)
    attention-kit-grade  the entrypoint
    attention_kit-<version>-py3-none-any.whl   the kit's wheel (kit_wheel.py): never in the question's folder
OUT/README.md            what to build, push and copy

Formats are PrairieLearn's (see grader.classroom.prairielearn).
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path

from grader.classroom.deployment import TORCH_INDEX, TORCH_REQUIREMENT, runtime_requirements
from grader.classroom.kit_wheel import build_wheel, wheel_name
from grader.classroom.prairielearn import CONFIG_NAME, DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT
from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog
from grader.records import MODULES
from grader.resources import STUBS_DIR

QUESTION_ID = "attention-ch3"
KIT_DIR = "/opt/attention-kit"
ENTRYPOINT = "/usr/local/bin/attention-kit-grade"
WHEEL_STAGE = "/tmp/attention-kit-wheel"  # where the Dockerfile puts the wheel while it installs it
DEFAULT_IMAGE = "attention-kit-grader:0.1.0"
SUBMIT_MODES = ("upload", "editors")
# A Docker image reference: [registry[:port]/]name[/name...][:tag]
IMAGE_PATTERN = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$"
)


class QuestionError(Exception):
    """The question cannot be written as asked (a bad option). Carries a message-catalogue key
    (prairielearn.error.<key>) and its parameters."""

    def __init__(self, key: str, **params: object):
        super().__init__(key)
        self.key = key
        self.params = params


def _environment(lang: str, autoescape: bool):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR / "prairielearn")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["t"] = Catalog(lang).t
    return env


def _existing_uuid(info: Path) -> str | None:
    """The uuid of a question written before: PrairieLearn knows a question by it, so it is kept."""
    try:
        value = json.loads(info.read_text(encoding="utf-8")).get("uuid")
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except (OSError, ValueError, AttributeError):
        return None


def info_json(*, title: str, image: str, timeout: int, question_uuid: str) -> dict:
    return {
        "uuid": question_uuid,
        "title": title,
        "topic": "Attention",
        "tags": ["attention-kit", "chapter3"],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "entrypoint": ENTRYPOINT,
            "timeout": timeout,
            "enableNetworking": False,
        },
    }


def write_question(
    out: Path, *, lang: str = "en", image: str = DEFAULT_IMAGE, submit: str = "upload", timeout: int = DEFAULT_TIMEOUT
) -> list[Path]:
    """Write the question and the image recipe under OUT; returns the files written."""
    if lang not in LANGUAGES or submit not in SUBMIT_MODES:
        raise ValueError(f"unknown language {lang!r} or submission mode {submit!r}")
    if not IMAGE_PATTERN.match(image):
        raise QuestionError("bad-image", image=image)
    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise QuestionError("bad-timeout", timeout=timeout, least=MIN_TIMEOUT, most=MAX_TIMEOUT)
    catalog = Catalog(lang)
    question = out / "questions" / QUESTION_ID
    image_dir = out / "grader-image"
    written: list[Path] = []

    def write(path: Path, text: str, mode: int = 0o644) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("\r\n", "\n"), encoding="utf-8")
        path.chmod(mode)
        written.append(path)

    info = info_json(
        title=catalog.t("prairielearn.question.title"),
        image=image,
        timeout=timeout,
        question_uuid=_existing_uuid(question / "info.json") or str(uuid.uuid4()),
    )
    write(question / "info.json", json.dumps(info, indent=4, ensure_ascii=False) + "\n")
    html = _environment(lang, autoescape=True).get_template("question.html.j2")
    write(question / "question.html", html.render(modules=MODULES, submit=submit))
    write(question / "tests" / CONFIG_NAME, json.dumps({"lang": lang, "timeout": timeout}, indent=2) + "\n")
    shutil.rmtree(question / "stubs", ignore_errors=True)
    if submit == "editors":
        for module in MODULES:
            write(question / "stubs" / f"{module}.py", (STUBS_DIR / f"{module}.py").read_text(encoding="utf-8"))

    text = _environment(lang, autoescape=False)
    context = {
        "image": image,
        "kit_dir": KIT_DIR,
        "entrypoint": ENTRYPOINT,
        "torch": TORCH_REQUIREMENT,
        "torch_index": TORCH_INDEX,
        "question_id": QUESTION_ID,
        "timeout": timeout,
        "wheel": wheel_name(),
        "wheel_stage": WHEEL_STAGE,
    }
    write(image_dir / "Dockerfile", text.get_template("Dockerfile.j2").render(context))
    write(image_dir / "requirements.txt", "\n".join(runtime_requirements()) + "\n")
    write(image_dir / "attention-kit-grade", text.get_template("entrypoint.sh.j2").render(context), 0o755)
    kit = image_dir / "kit"  # where an older `grade prairielearn` copied the kit's tree
    if kit.is_symlink():
        kit.unlink()
    shutil.rmtree(kit, ignore_errors=True)
    for old in image_dir.glob("*.whl"):  # nothing of an older kit lingers
        old.unlink()
    written.append(build_wheel(image_dir))
    write(out / "README.md", text.get_template("README.md.j2").render(context))
    return written
