"""Gradescope: an autograder zip whose run_autograder grades with the kit's own path.

`build_autograder_zip(OUT.zip)` writes setup.sh (installs torch==2.13.0 CPU and the kit),
run_autograder (rendered from templates/gradescope/) and the kit itself under kit/. On Gradescope
run_autograder calls ``python -m grader.classroom.gradescope run``: `grader.runner.grade` on
/autograder/submission, then our results.json converted to Gradescope's
/autograder/results/results.json (per test: name, score, max_score, output, visibility; the total
score; the student's feedback.md as the overall output). Whatever happens, a results.json is
written: a grader failure gives score 0 and says it is the grader's fault.
"""
from __future__ import annotations

import argparse
import json
import shutil
import stat
import sys
import tempfile
import time
import zipfile
from collections import deque
from pathlib import Path
from typing import Any

from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog

ROOT = Path(__file__).resolve().parents[2]
KIT_PARTS = ("grader", "solutions", "templates", "pyproject.toml", "README.md", "LICENSE")
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
IGNORED_DIRS = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}


# ------------------------------------------------------------------------------------------------
# Building the zip
# ------------------------------------------------------------------------------------------------

def _kit_files() -> list[tuple[Path, str]]:
    files = []
    for part in KIT_PARTS:
        path = ROOT / part
        if path.is_file():
            files.append((path, f"kit/{part}"))
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
                    files.append((file, f"kit/{file.relative_to(ROOT).as_posix()}"))
    return files


def build_autograder_zip(out: Path, *, lang: str = "en", visibility: str = "visible") -> Path:
    import jinja2

    if lang not in LANGUAGES or visibility not in VISIBILITIES:
        raise ValueError(f"unknown language {lang!r} or visibility {visibility!r}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR / "gradescope")),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    scripts = {name: env.get_template(f"{name}.j2").render(lang=lang, visibility=visibility)
               for name in ("setup.sh", "run_autograder")}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in scripts.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text.replace("\r\n", "\n"))
        for path, name in _kit_files():
            archive.write(path, name)
    return out


# ------------------------------------------------------------------------------------------------
# Running on Gradescope
# ------------------------------------------------------------------------------------------------

def locate_submission(path: Path) -> Path | None:
    """The folder holding the modules: the upload itself, or the first folder inside it that does
    (students often upload a zip with a folder in it)."""
    from grader.intake.discovery import holds_submission

    queue = deque([path])
    while queue:
        folder = queue.popleft()
        if holds_submission(folder):
            return folder
        queue.extend(sorted(child for child in folder.iterdir()
                            if child.is_dir() and not child.name.startswith(".") and child.name not in IGNORED_DIRS))
    return None


def to_gradescope(document: dict[str, Any], catalog: Catalog, *, visibility: str = "visible",
                  feedback_md: str = "", seconds: float = 0.0) -> dict[str, Any]:
    """Our results.json as Gradescope's results.json."""
    tests = []
    for test in document.get("tests", []):
        title_key = f"tests.{test['id']}.title"
        title = catalog.t(title_key) if catalog.has(title_key) else test["id"].split("::")[-1]
        output = test.get("message") or ""
        misconception = test.get("misconception")
        if misconception:
            key = f"misconceptions.{misconception}.title"
            cause = catalog.t(key) if catalog.has(key) else misconception
            output = f"{output}\n\n{catalog.t('classroom.nbgrader.likely-cause')}: {cause}".strip()
        tests.append({
            "name": f"{test['section']} {title}",
            "number": test["id"],
            "score": float(test["points"]),
            "max_score": float(test["max_points"]),
            "status": "passed" if test["status"] == "passed" else "failed",
            "output": output,
            "visibility": visibility,
        })
    summary = catalog.t("classroom.gradescope.summary", score=f"{document['score']:g}",
                        max_score=f"{document['max_score']:g}")
    return {
        "score": float(document["score"]),
        "execution_time": round(seconds, 2),
        "output": (summary + "\n\n" + feedback_md).strip(),
        "output_format": "md",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _failure(message: str) -> dict[str, Any]:
    return {"score": 0.0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def run(root: Path, *, lang: str = "en", visibility: str = "visible") -> dict[str, Any]:
    """Grade ROOT/submission and write ROOT/results/results.json; returns what was written."""
    catalog = Catalog(lang)
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        submission = locate_submission(root / "submission")
        if submission is None:
            result = _failure(catalog.t("classroom.gradescope.no-submission"))
        else:
            from grader.runner import grade

            with tempfile.TemporaryDirectory(prefix="kit-gradescope-") as scratch:
                # A copy under a fixed name, so that reports say "submission" and nothing else.
                copy = Path(scratch) / "submission"
                copy.mkdir()
                for file in submission.iterdir():
                    if file.is_file() and file.suffix in (".py", ".ipynb"):
                        shutil.copyfile(file, copy / file.name)
                out = results_dir / "kit-report"
                grade(copy, out, jobs=1, lang=lang, force=True)
            document = json.loads((out / "results.json").read_text(encoding="utf-8"))
            feedback = (out / "feedback.md").read_text(encoding="utf-8") if (out / "feedback.md").exists() else ""
            result = to_gradescope(document, catalog, visibility=visibility, feedback_md=feedback,
                                   seconds=time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - Gradescope must always get a results.json
        result = _failure(catalog.t("classroom.gradescope.failed", reason=f"{type(exc).__name__}: {exc}"[:300]))
    (results_dir / "results.json").write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.gradescope")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="grade /autograder/submission into /autograder/results/results.json")
    run_parser.add_argument("--root", type=Path, default=Path("/autograder"))
    run_parser.add_argument("--lang", choices=LANGUAGES, default="en")
    run_parser.add_argument("--visibility", choices=VISIBILITIES, default="visible")
    args = parser.parse_args(argv)
    result = run(args.root, lang=args.lang, visibility=args.visibility)
    print(f"score {result['score']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
