"""PrairieLearn: an externally graded question, and the grading image that grades it with the kit.

Formats, from PrairieLearn's documentation (github.com/PrairieLearn/PrairieLearn, docs/externalGrading.md,
docs/elements/pl-file-editor.md, pl-file-upload.md, pl-external-grader-results.md, and the question
schema apps/prairielearn/src/schemas/infoQuestion.ts):
- info.json: "gradingMethod": "External" and "externalGradingOptions" with `enabled`, `image` (a
  Docker Hub image), `entrypoint` (an absolute path, executable in the image), `timeout` (seconds,
  at most 600; default 30) and `enableNetworking` (off by default);
- in the grading container: /grade/student (the submitted files), /grade/tests (the question's
  tests/ folder), /grade/data/data.json; the entrypoint must create /grade/results and write
  results.json there, at most 1 MB: `score` in [0, 1], or `gradable: false` with `format_errors`
  (a string or a list of strings; no attempt is used); optional `message`, `output`, `images`
  ({label, url} with a data: URL) and `tests` ({name, description, points, max_points, message,
  output, images});
- question.html: <pl-file-editor file-name=… source-file-name=… directory=…> or
  <pl-file-upload optional-file-names=… optional-file-patterns=…>, and
  <pl-external-grader-results> in the submission panel.

`grade prairielearn OUT` writes OUT/questions/<id>/ (info.json, question.html, tests/) and
OUT/grader-image/ (Dockerfile, requirements.txt, the entrypoint, the kit's wheel): see `question`. In the
container, the entrypoint runs ``python -m grader.classroom.prairielearn run``: /grade becomes
reachable by root only, the upload is located without following links, read by the kit's intake and
graded by `grader.run.grade` (the same path as `grade`), and results.json is written, always.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

from grader.classroom.deployment import (
    ROOT,
    Graded,
    answer_key_exposure,
    grade_upload,
    limits_within,
    locate_submission,
    protection_lines,
    restrict_to_owner,
)
from grader.classroom.feedback_channels import channel_macros, check_blocks
from grader.i18n import LANGUAGES, Catalog
from grader.quick_exit import exit_now
from grader.records import GradeResult
from grader.report.feedback import feedback_view
from grader.report.messages import note_view
from grader.report.textsafe import clean, clip, fit_json

CONFIG_NAME = "attention-kit.json"  # in the question's tests/ folder: {"lang": "en" | "zh", "timeout": seconds}
DEFAULT_TIMEOUT = 120  # seconds; PrairieLearn allows at most 600
MAX_TIMEOUT = 600
# the least the kit accepts: after start-up (deployment.STARTUP_SECONDS), each of the seven modules
# still gets about 8 s of wall clock (deployment.limits_within), enough for correct code on a slow host
MIN_TIMEOUT = 90
MAX_RESULTS_BYTES = 1_000_000  # PrairieLearn: results.json "should be limited to 1 MB"
MAX_TEST_TEXT = 6_000
MAX_CONFIG_BYTES = 64 * 1024
PARSE_ERRORS = {"SyntaxError", "IndentationError", "TabError"}
SVG_NAMESPACE = 'xmlns="http://www.w3.org/2000/svg"'


# ------------------------------------------------------------------------------------------------
# results.json
# ------------------------------------------------------------------------------------------------


def _svg_data_url(grid: Any, tokens: list[str], catalog: Catalog) -> str:
    from grader.report.render import _attention_grid  # jinja2: not loaded by `grade` commands that draw nothing

    svg = str(
        _attention_grid(
            catalog.lang, grid, tuple(tokens), catalog.t("report.heatmap.query"), catalog.t("report.heatmap.key")
        )
    )
    svg = svg.strip().replace("<svg ", f"<svg {SVG_NAMESPACE} ", 1)  # a file needs its namespace
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _images(check: Any, catalog: Catalog) -> list[dict[str, str]]:
    """The student's and the reference's attention weights, for a check whose weights differ."""
    heatmap = check.heatmap
    if heatmap is None or check.passed or (heatmap.student is not None and not heatmap.differing):
        return []
    images = []
    if heatmap.student is not None:
        images.append(
            {"label": catalog.t("report.heatmap.yours"), "url": _svg_data_url(heatmap.student, heatmap.tokens, catalog)}
        )
    images.append(
        {
            "label": catalog.t("report.heatmap.reference"),
            "url": _svg_data_url(heatmap.reference, heatmap.tokens, catalog),
        }
    )
    return images


def format_errors(result: GradeResult, catalog: Catalog) -> list[str]:
    """Why nothing of a submission could be graded (it is then "not gradable": no attempt used):
    every module is missing, unreadable or fails to parse when imported. Empty when anything could be
    graded: code that imports and then raises SyntaxError from its functions must not be able to
    choose, probe by probe, whether an attempt counts."""
    errors: dict[str, str] = {}
    for outcome in result.tests:
        error = outcome.error
        if outcome.status == "passed" or error is None:
            return []
        if error.key in ("import.missing", "import.missing-notebook"):
            continue
        if error.kind != "import" or error.exc_type not in PARSE_ERRORS:
            return []  # (a SyntaxError that student code raises when called is an answer, not a parse error)
        errors.setdefault(error.module or outcome.module, outcome.message)
    notes = [n for n in result.integrity if n.kind.startswith("submission.")]
    if not errors and not notes and result.tests:
        errors["missing"] = catalog.t("prairielearn.no-module")
    return [clean(text) for text in [*(note_view(n, catalog).text for n in notes), *errors.values()]]


def to_prairielearn(graded: Graded, catalog: Catalog, seconds: float = 0.0) -> dict[str, Any]:
    """The kit's grading of one upload as PrairieLearn's results.json (at most 1 MB)."""
    result = graded.result
    errors = format_errors(result, catalog)
    if errors:
        return not_gradable(errors, catalog)
    view = feedback_view(result, catalog)
    macros = channel_macros(catalog, "prairielearn/results.txt.j2")
    tests = []
    for block in check_blocks(view, catalog):
        check = block.check
        test = {
            "name": clean(f"{block.label} {check.title}"),
            "description": clean(block.section.title),
            "points": float(check.points),
            "max_points": float(check.max_points),
            "message": clip(_tidy(macros.check_message(block)), MAX_TEST_TEXT),
            "output": clip(_tidy(macros.check_output(block)), MAX_TEST_TEXT),
        }
        images = _images(check, catalog)
        if images:
            test["images"] = images
        tests.append(test)
    score = result.score / result.max_score if result.max_score else 0.0
    document = {
        "gradable": True,
        "score": min(1.0, max(0.0, score)) if math.isfinite(score) else 0.0,
        "message": clean(_tidy(macros.summary(view))),
        "output": clean(_tidy(macros.report(view))),
        "tests": tests,
        "execution_time": round(seconds, 2),
    }
    return fit_json(document, MAX_RESULTS_BYTES)


def _tidy(text: str) -> str:
    """Plain text from the templates: blocks apart by one blank line, no trailing spaces."""
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", text)).strip()


def not_gradable(errors: list[str], catalog: Catalog) -> dict[str, Any]:
    document = {
        "gradable": False,
        "format_errors": [clip(e, MAX_TEST_TEXT) for e in errors],
        "message": catalog.t("prairielearn.not-gradable"),
    }
    return fit_json(document, MAX_RESULTS_BYTES, shrink=("message",), per_test=())


# ------------------------------------------------------------------------------------------------
# The entrypoint, in the grading container
# ------------------------------------------------------------------------------------------------


def read_config(tests_dir: Path) -> dict[str, Any]:
    """The question's tests/attention-kit.json (the language of the feedback); {} when absent or bad."""
    try:
        fd = os.open(tests_dir / CONFIG_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG_BYTES:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            config = json.loads(handle.read(MAX_CONFIG_BYTES))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    return config if isinstance(config, dict) else {}


def _timeout(config: dict[str, Any]) -> int:
    """The question's externalGradingOptions.timeout, as `grade prairielearn` wrote it beside the
    language (a question written before it was recorded: the default)."""
    timeout = config.get("timeout")
    return timeout if type(timeout) is int and MIN_TIMEOUT <= timeout <= MAX_TIMEOUT else DEFAULT_TIMEOUT


def run(root: Path = Path("/grade"), *, lang: str | None = None) -> dict[str, Any]:
    """Grade ROOT/student and write ROOT/results/results.json; returns what was written."""
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    restrict_to_owner(root)
    config = read_config(root / "tests")
    configured = config.get("lang")
    lang = lang or (configured if configured in LANGUAGES else "en")
    catalog = Catalog(lang)
    started = time.perf_counter()
    log: list[str] = []
    try:
        folder = locate_submission(root / "student")
        if folder is None:
            result = not_gradable([catalog.t("prairielearn.no-submission")], catalog)
        else:
            graded = grade_upload(root / "student", lang=lang, limits=limits_within(_timeout(config)))
            log = protection_lines(graded.protections, answer_key_exposure(ROOT), catalog)
            result = to_prairielearn(graded, catalog, time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - PrairieLearn must always get a results.json
        result = not_gradable(
            [catalog.t("prairielearn.grader-failed", reason=clip(f"{type(exc).__name__}: {exc}", 300))], catalog
        )
    text = json.dumps(result, indent=2, ensure_ascii=False)
    (results_dir / "results.json").write_text(text, encoding="utf-8")
    for line in log:
        print(line)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.prairielearn")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="grade /grade/student into /grade/results/results.json")
    run_parser.add_argument("--root", type=Path, default=Path("/grade"))
    run_parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="language of the feedback (default: tests/attention-kit.json, else en)",
    )
    args = parser.parse_args(argv)
    result = run(args.root, lang=args.lang)
    print(f"score {result['score']:g}" if result.get("gradable", True) else "not gradable")
    return 0 if argv is not None else exit_now(0)  # the platform's command: nothing runs after it


if __name__ == "__main__":
    sys.exit(main())
