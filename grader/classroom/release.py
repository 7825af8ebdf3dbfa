"""The student bundle: stubs, a README and public self-checks (never the hidden suites or solutions).

Layout of OUT/:
    README.md              rendered from grader/templates/release/README.md.j2 with the catalogue
    exercises/*.py         the stubs, and exercises/README.md (with --lang zh, their Chinese edition:
                           exercises/zh/, exercises/mindspore/zh/)
    check.py               the self-check: finds the student's code and runs the public checks
    ch3_checks.py          runs the public checks and reports (also shipped with the nbgrader
                           notebook, see `write_public_checks`); ch3_check_list.py: the checks,
                           PyTorch's or the MindSpore edition's (templates/release/mindspore/),
                           the one difference between the frameworks' bundles besides the stubs;
                           ch3_check_tools.py: what every check list is made of;
                           ch3_check_diagnosis.py and ch3_check_trace.py: why a check failed
    ch3_check_values.py    PyTorch: the value checks, and check_expected.json, what they compare
                           with (the reference's and known mistakes' outputs on their public inputs,
                           grader.classroom.public_expected)
    check_report.txt.j2    the layout of their report (jinja2, which PyTorch installs anyway)
    check_messages.json    their strings in every language, taken from the message catalogues
    _kit/grader/...        a copy of the grader's intake (grader/intake/ and the kit modules it
                           imports): check.py finds .py files and notebooks by the grader's rules;
                           and grader/stand_ins.py: a module that imports a broken one still imports
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

from grader.i18n import LANGUAGES, Catalog, _load, section_key
from grader.records import MODULE_SECTIONS
from grader.resources import KIT_DIR as GRADER_DIR
from grader.resources import STUBS_DIR, TEMPLATES_DIR

ROOT = GRADER_DIR.parent  # where the package `grader` is: a checkout, or site-packages
RELEASE_TEMPLATES = TEMPLATES_DIR / "release"
PUBLIC_CHECK_FILES = (
    "ch3_checks.py",
    "ch3_check_tools.py",
    "ch3_check_diagnosis.py",
    "ch3_check_trace.py",
    "check_report.txt.j2",
)
VALUE_CHECKS = "ch3_check_values.py"  # PyTorch's, with EXPECTED
EXPECTED = "check_expected.json"
CHECK_LIST = "ch3_check_list.py"
SECTIONS_FILE = "ch3_check_sections.py"  # the kit's manifest of the sections (grader/sections.py)
KIT_DIR = "_kit"
INTAKE = "grader.intake"
# Never part of anything students get.
SECRET_MODULES = ("grader.suites", "grader.probes", "grader.diagnosis", "grader.sandbox", "solutions")
# The MindSpore track's stubs, README and check list live in mindspore/ folders (grader/exercises/,
# grader/templates/release/).
FRAMEWORKS = ("pytorch", "mindspore")
FIELDS = (("causes", "title"), ("hints", "hint"))  # of a misconception, in check_messages.json


class ReleaseError(Exception):
    pass


def _flat(tree: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        elif isinstance(value, str):
            flat[prefix + key] = value
    return flat


def check_messages(default: str, framework: str = "pytorch") -> dict:
    """The public checks' strings per language (flat keys), with the section titles, the
    messages about submissions that cannot be read (the intake's problems) and about names that look
    misspelt (its near misses), the misconceptions' titles and hints (`causes.<id>`, `hints.<id>`: a
    check names the cause it recognises) and the steps of the pipeline with their hints
    (`checkpoints.<name>`, `checkpoint-hints.<name>`)."""
    messages: dict = {"default": default}
    for lang in LANGUAGES:
        catalog = Catalog(lang)
        tree = _load(lang)
        flat = _flat(tree.get("classroom", {}).get("check", {}))
        flat |= _flat(tree.get("integrity", {}).get("submission", {}), "integrity.submission.")
        flat |= _flat(tree.get("found", {}), "found.")  # names that look misspelt, where they are
        if framework == "mindspore":  # item texts of the MindSpore edition (mindspore.toml)
            flat |= _flat(tree.get("classroom", {}).get("check-mindspore", {}))
        flat |= {f"section.{module}": catalog.t(section_key(section)) for module, section in MODULE_SECTIONS.items()}
        for name, entry in tree.get("misconceptions", {}).items():
            if isinstance(entry, dict):
                flat |= {f"{field}.{name}": entry[key] for field, key in FIELDS if isinstance(entry.get(key), str)}
        diagnosis = tree.get("diagnosis", {})
        flat |= _flat(diagnosis.get("checkpoints", {}), "checkpoints.")
        flat |= _flat(diagnosis.get("hints", {}), "checkpoint-hints.")
        glosses = tree.get("python-errors", {}).get("gloss", {})
        flat |= {f"hints.python-{name}": text for name, text in glosses.items() if name != "other"}
        messages[lang] = flat
    return messages


def write_public_checks(folder: Path, lang: str, framework: str = "pytorch") -> list[Path]:
    """The public checks of `framework` with their runner, report layout and messages (default
    language `lang`)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [Path(shutil.copyfile(RELEASE_TEMPLATES / name, folder / name)) for name in PUBLIC_CHECK_FILES]
    check_list = RELEASE_TEMPLATES / ("mindspore" if framework == "mindspore" else "") / CHECK_LIST
    written.append(Path(shutil.copyfile(check_list, folder / CHECK_LIST)))
    written.append(Path(shutil.copyfile(GRADER_DIR / "sections.py", folder / SECTIONS_FILE)))
    if framework != "mindspore":
        from grader.classroom.public_expected import expected_document

        written.append(Path(shutil.copyfile(RELEASE_TEMPLATES / VALUE_CHECKS, folder / VALUE_CHECKS)))
        expected = folder / EXPECTED
        expected.write_text(json.dumps(expected_document(), separators=(",", ":")) + "\n", encoding="utf-8")
        written.append(expected)
    messages = folder / "check_messages.json"
    messages.write_text(
        json.dumps(check_messages(lang, framework), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    return [*written, messages]


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _kit_imports(file: Path, package: str) -> set[str]:
    """The kit modules (grader.*) a file imports, anywhere in it (also inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}  # `from pkg import module`
    return {name for name in names if name == "grader" or name.startswith("grader.")}


def intake_closure() -> dict[str, Path]:
    """Module name -> file of grader/intake/, of the stand-ins for modules that do not import
    (check.py grades by the grader's policy: docs/grading-policy.md), and of every kit module they
    import, with their packages."""
    todo = [
        f"{INTAKE}.{f.stem}" if f.stem != "__init__" else INTAKE for f in sorted((GRADER_DIR / "intake").glob("*.py"))
    ] + ["grader.stand_ins"]
    found: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        file = _module_file(name)
        if name in found or file is None:
            continue
        found[name] = file
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        todo += [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]  # parent packages
        todo += sorted(_kit_imports(file, package))
    secret = [name for name in found if name.startswith(SECRET_MODULES)]
    if secret:
        raise ReleaseError(f"the intake imports modules students must never get: {', '.join(sorted(secret))}")
    return found


def write_kit_intake(folder: Path) -> list[Path]:
    written = []
    for file in intake_closure().values():
        target = folder / KIT_DIR / file.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        written.append(Path(shutil.copyfile(file, target)))
    return written


def stubs_dir(framework: str = "pytorch", lang: str = "en") -> Path:
    """The stubs students get: grader/exercises/ (mindspore/ for that edition), their Chinese edition in zh/
    (docstrings in Chinese, the same code)."""
    folder = STUBS_DIR / ("mindspore" if framework == "mindspore" else "")
    return folder / "zh" if lang == "zh" else folder


def write_release(out: Path, *, lang: str = "en", force: bool = False, framework: str = "pytorch") -> list[Path]:
    """Write the bundle (stubs and self-check of `framework`); returns the files written."""
    import jinja2

    if framework not in FRAMEWORKS:
        raise ReleaseError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")
    stubs = stubs_dir(framework, lang)
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
    written.append(Path(shutil.copyfile(RELEASE_TEMPLATES / "check.py", out / "check.py")))
    written += write_public_checks(out, lang, framework)
    written += write_kit_intake(out)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    env.globals["t"] = catalog.t
    readme = out / "README.md"
    readme.write_text(env.get_template(readme_template).render(), encoding="utf-8")
    written.append(readme)
    return written
