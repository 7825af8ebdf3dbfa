"""The student bundle: stubs, a README and public self-checks (never the hidden suites or solutions).

Layout of OUT/:
    README.md              rendered from templates/release/README.md.j2 with the catalogue
    exercises/*.py         the stubs, and exercises/README.md
    check.py               the self-check: a tiny runner with a few public shape/sanity checks
    check_report.txt.j2    the layout of its report (jinja2, which PyTorch installs anyway)
    check_messages.json    its strings in every language, taken from the message catalogues
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog, _load, section_key
from grader.records import MODULE_SECTIONS

ROOT = Path(__file__).resolve().parents[2]
RELEASE_TEMPLATES = TEMPLATES_DIR / "release"
STATIC_FILES = ("check.py", "check_report.txt.j2")
FRAMEWORKS = ("pytorch", "mindspore")  # the MindSpore track's stubs, README and check.py live in mindspore/ folders


class ReleaseError(Exception):
    pass


def check_messages(default: str, framework: str = "pytorch") -> dict:
    """The self-check's strings per language (flat keys), with the section titles."""
    messages: dict = {"default": default}
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        tree = _load(lang).get("classroom", {}).get("check", {})
        flat = {key: value for key, value in tree.items() if isinstance(value, str)}
        flat |= {f"items.{key}": value for key, value in tree.get("items", {}).items()}
        if framework == "mindspore":  # item texts of the MindSpore edition (mindspore.toml)
            overrides = _load(lang).get("classroom", {}).get("check-mindspore", {}).get("items", {})
            flat |= {f"items.{key}": value for key, value in overrides.items()}
        flat |= {f"section.{module}": catalog.t(section_key(section)) for module, section in MODULE_SECTIONS.items()}
        messages[lang] = flat
    return messages


def write_release(out: Path, *, lang: str = "en", force: bool = False, framework: str = "pytorch") -> list[Path]:
    """Write the bundle (stubs and self-check of `framework`); returns the files written."""
    import jinja2

    if framework not in FRAMEWORKS:
        raise ReleaseError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")
    stubs = ROOT / "exercises" / ("mindspore" if framework == "mindspore" else "")
    templates = RELEASE_TEMPLATES / ("mindspore" if framework == "mindspore" else "")
    readme_template = "release/mindspore/README.md.j2" if framework == "mindspore" else "release/README.md.j2"

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise ReleaseError(f"{out} is not empty (use --force to write into it)")
    catalog = Catalog(lang)
    written: list[Path] = []
    exercises = out / "exercises"
    exercises.mkdir(parents=True, exist_ok=True)
    for module in MODULE_SECTIONS:
        written.append(Path(shutil.copyfile(stubs / f"{module}.py", exercises / f"{module}.py")))
    written.append(Path(shutil.copyfile(stubs / "README.md", exercises / "README.md")))
    for name in STATIC_FILES:
        source = templates / name if (templates / name).exists() else RELEASE_TEMPLATES / name
        written.append(Path(shutil.copyfile(source, out / name)))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    env.globals["t"] = catalog.t
    readme = out / "README.md"
    readme.write_text(env.get_template(readme_template).render(), encoding="utf-8")
    written.append(readme)
    messages = out / "check_messages.json"
    messages.write_text(json.dumps(check_messages(lang, framework), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    written.append(messages)
    return written
