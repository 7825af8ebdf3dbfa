"""Gradescope: an autograder zip whose run_autograder grades with the kit's own path.

Format: Gradescope's autograder specification (setup.sh and run_autograder at the root of the zip;
/autograder/source, /autograder/submission, /autograder/results/results.json with score,
execution_time, output, output_format, visibility, stdout_visibility, extra_data and tests of name,
number, score, max_score, status, output, visibility), https://gradescope-autograders.readthedocs.io/
en/latest/specs/ (github.com/gradescope/autograder_samples, docs/specs.md).

`build_autograder_zip(OUT.zip)` writes setup.sh, run_autograder (templates/gradescope/) and the kit's
wheel (kit_wheel.py). setup.sh installs Python >= 3.11, bubblewrap, torch (pinned, CPU) and the kit's
runtime dependencies into a virtual environment, and the wheel with `pip install --no-deps --target
/autograder/source/kit`: out of site-packages, readable by root only. run_autograder calls
``python -m grader.classroom.gradescope run``: the upload is located without following links, read
by the kit's intake, graded by `grader.run.grade` into a private folder, and converted to
Gradescope's results.json. Whatever happens, a results.json is written: a grader failure gives
score 0 and says it is the grader's fault. Which protections are missing is printed to the
autograder's stdout, which Gradescope shows to instructors only.
"""

from __future__ import annotations

import argparse
import json
import re
import stat
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from grader.classroom.deployment import (
    ROOT,
    TORCH_INDEX,
    TORCH_REQUIREMENT,
    answer_key_exposure,
    grade_upload,
    locate_submission,
    protection_lines,
    restrict_to_owner,
    runtime_requirements,
)
from grader.classroom.feedback_channels import channel_macros, check_blocks
from grader.classroom.kit_wheel import build_wheel, wheel_name
from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog
from grader.quick_exit import exit_now
from grader.records import GradeResult
from grader.report.feedback import feedback_view
from grader.report.textsafe import clean, clip, fit_json

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
VENV = "/opt/attention-kit-venv"  # where setup.sh installs Python's packages (never the kit)
MAX_OUTPUT = 64_000  # characters of one test's output
MAX_RESULTS_BYTES = 1_000_000

__all__ = ["VISIBILITIES", "build_autograder_zip", "locate_submission", "main", "run", "to_gradescope"]


# ------------------------------------------------------------------------------------------------
# Building the zip
# ------------------------------------------------------------------------------------------------


def render_scripts(*, lang: str = "en", visibility: str = "visible") -> dict[str, str]:
    """setup.sh and run_autograder, rendered from templates/gradescope/."""
    import jinja2

    if lang not in LANGUAGES or visibility not in VISIBILITIES:
        raise ValueError(f"unknown language {lang!r} or visibility {visibility!r}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR / "gradescope")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    context = {
        "lang": lang,
        "visibility": visibility,
        "venv": VENV,
        "torch": TORCH_REQUIREMENT,
        "torch_index": TORCH_INDEX,
        "requirements": runtime_requirements(),
        "wheel": wheel_name(),
    }
    return {
        name: env.get_template(f"{name}.j2").render(context).replace("\r\n", "\n")
        for name in ("setup.sh", "run_autograder")
    }


def build_autograder_zip(out: Path, *, lang: str = "en", visibility: str = "visible") -> Path:
    scripts = render_scripts(lang=lang, visibility=visibility)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in scripts.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        with tempfile.TemporaryDirectory(prefix="attention-kit-wheel-") as folder:
            wheel = build_wheel(Path(folder))
            info = zipfile.ZipInfo(wheel.name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, wheel.read_bytes(), zipfile.ZIP_STORED)  # a wheel is compressed already
    return out


# ------------------------------------------------------------------------------------------------
# Running on Gradescope
# ------------------------------------------------------------------------------------------------


def to_gradescope(
    result: GradeResult, catalog: Catalog, *, visibility: str = "visible", seconds: float = 0.0
) -> dict[str, Any]:
    """The kit's grading of one upload as Gradescope's results.json (every string made safe to
    serialise). Each test's `number` is its book section ("3.5", "Ex. 3.1") and its `name` the
    check's title; its `output` (Markdown) holds that check's whole diagnosis; the top-level output
    is the summary: score, where to go next, sections, what probably went wrong."""
    view = feedback_view(result, catalog)
    macros = channel_macros(catalog, "gradescope/results.md.j2")
    tests = [
        {
            "name": clean(block.check.title),
            "number": clean(block.label),
            "score": float(block.check.points),
            "max_score": float(block.check.max_points),
            "status": "passed" if block.check.passed else "failed",
            "output": "" if block.check.passed else clip(_tidy(macros.test_output(block)), MAX_OUTPUT),
            "output_format": "md",  # as the overall output: the student's text is fenced, ours escaped
            "visibility": visibility,
        }
        for block in check_blocks(view, catalog)
    ]
    document = {
        "score": float(result.score),
        "execution_time": round(seconds, 2),
        "output": clean(_tidy(macros.summary(view))),
        "output_format": "md",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    return fit_json(document, MAX_RESULTS_BYTES, shrink=("output",), per_test=("output",))


def _tidy(markdown: str) -> str:
    """Markdown from the templates without runs of blank lines."""
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


def _failure(message: str) -> dict[str, Any]:
    return {"score": 0.0, "output": clean(message), "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def run(root: Path, *, lang: str = "en", visibility: str = "visible") -> dict[str, Any]:
    """Grade ROOT/submission and write ROOT/results/results.json; returns what was written.

    ROOT becomes reachable by root only, first: the sandbox's children see nothing of /autograder
    (the kit, the upload, submission_metadata.json, the results), whether or not bubblewrap runs."""
    catalog = Catalog(lang)
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    restrict_to_owner(root)
    started = time.perf_counter()
    log = []
    try:
        submission = locate_submission(root / "submission")
        if submission is None:
            result = _failure(catalog.t("classroom.gradescope.no-submission"))
        else:
            graded = grade_upload(root / "submission", lang=lang, report_copy=results_dir / "kit-report")
            log = protection_lines(graded.protections, answer_key_exposure(ROOT), catalog)
            result = to_gradescope(graded.result, catalog, visibility=visibility, seconds=time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - Gradescope must always get a results.json
        result = _failure(catalog.t("classroom.gradescope.failed", reason=f"{type(exc).__name__}: {exc}"[:300]))
    (results_dir / "results.json").write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    for line in log:
        print(line)
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
    return 0 if argv is not None else exit_now(0)  # the platform's command: nothing runs after it


if __name__ == "__main__":
    sys.exit(main())
