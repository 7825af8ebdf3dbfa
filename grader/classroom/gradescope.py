"""Gradescope: an autograder zip whose run_autograder grades with the kit's own path.

Format: Gradescope's autograder specification (setup.sh and run_autograder at the root of the zip;
/autograder/source, /autograder/submission, /autograder/results/results.json with score,
execution_time, output, output_format, visibility, stdout_visibility, extra_data and tests of name,
number, score, max_score, status, output, visibility), https://gradescope-autograders.readthedocs.io/
en/latest/specs/ (github.com/gradescope/autograder_samples, docs/specs.md).

`build_autograder_zip(OUT.zip)` writes setup.sh, run_autograder (templates/gradescope/) and the kit
under kit/. setup.sh installs Python >= 3.11, bubblewrap, torch (pinned, CPU) and the kit's runtime
dependencies into a virtual environment: never the kit itself, which stays in
/autograder/source/kit, readable by root only. run_autograder calls
``python -m grader.classroom.gradescope run``: the upload is located without following links, read
by the kit's intake, graded by `grader.run.grade` into a private folder, and converted to
Gradescope's results.json. Whatever happens, a results.json is written: a grader failure gives
score 0 and says it is the grader's fault. Which protections are missing is printed to the
autograder's stdout, which Gradescope shows to instructors only.
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
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
    kit_files,
    locate_submission,
    protection_lines,
    restrict_to_owner,
    runtime_requirements,
)
from grader.classroom.textsafe import clean, clip, fit_json
from grader.i18n import LANGUAGES, TEMPLATES_DIR, Catalog
from grader.quick_exit import exit_now
from grader.report.said import fenced

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
        for path, name in kit_files(ROOT):
            archive.write(path, f"kit/{name}")
    return out


# ------------------------------------------------------------------------------------------------
# Running on Gradescope
# ------------------------------------------------------------------------------------------------


def to_gradescope(
    document: dict[str, Any],
    catalog: Catalog,
    *,
    visibility: str = "visible",
    feedback_md: str = "",
    seconds: float = 0.0,
) -> dict[str, Any]:
    """Our results.json as Gradescope's results.json (every string made safe to serialise)."""
    tests = []
    for test in document.get("tests", []):
        title_key = f"tests.{test['id']}.title"
        title = catalog.t(title_key) if catalog.has(title_key) else test["id"].split("::")[-1]
        output = test.get("message") or ""
        module = test["id"].split("::")[0]
        if output in (catalog.t("import.missing", module=module), catalog.t("import.missing-notebook", module=module)):
            output = ""  # a missing module is said once, in the overall output, not by each of its tests
        if test.get("output"):  # the student's own text (an exception's message), quoted as it is
            output = f"{output}\n\n{fenced(str(test['output']))}".strip()
        misconception = test.get("misconception")
        if misconception:
            key = f"misconceptions.{misconception}.title"
            cause = catalog.t(key) if catalog.has(key) else misconception
            output = f"{output}\n\n{catalog.t('classroom.nbgrader.likely-cause')}: {cause}".strip()
        tests.append(
            {
                "name": clean(f"{test['section']} {title}"),
                "number": clean(test["id"]),
                "score": float(test["points"]),
                "max_score": float(test["max_points"]),
                "status": "passed" if test["status"] == "passed" else "failed",
                "output": clip(output, MAX_OUTPUT),
                "output_format": "md",  # as the overall output: the student's text is fenced, ours escaped
                "visibility": visibility,
            }
        )
    summary = catalog.t(
        "classroom.gradescope.summary", score=f"{document['score']:g}", max_score=f"{document['max_score']:g}"
    )
    result = {
        "score": float(document["score"]),
        "execution_time": round(seconds, 2),
        "output": clean((summary + "\n\n" + feedback_md).strip()),
        "output_format": "md",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    return fit_json(result, MAX_RESULTS_BYTES, shrink=("output",), per_test=("output",))


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
            graded = grade_upload(submission, lang=lang, report_copy=results_dir / "kit-report")
            log = protection_lines(graded.protections, answer_key_exposure(ROOT), catalog)
            result = to_gradescope(
                graded.document,
                catalog,
                visibility=visibility,
                feedback_md=graded.feedback_md,
                seconds=time.perf_counter() - started,
            )
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
