"""What the grading platforms (Gradescope, PrairieLearn) share.

- the kit's runtime requirements, for an autograder zip or a grading image (the kit itself goes
  there as its wheel: kit_wheel.py);
- finding the modules in an upload without ever following a link;
- grading that folder with the kit's own path (`grader.run.grade`) into a folder only the
  grading user can read (the reference outputs cached there must never be in reach of the sandbox);
- checking, and saying precisely, whether the answer key is out of reach of the sandbox's user.

On both platforms the kit's wheel is installed with `pip install --no-deps --target` into a folder
readable by root only, out of site-packages: the sandbox's children run under their own uid and,
where bubblewrap cannot run (e.g. a container without the privileges it needs), file permissions
are what keeps the answer key from them.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.i18n import Catalog
from grader.intake.discovery import find_upload
from grader.records import MODULES, GradeResult, IntegrityNote
from grader.report.results_file import DISTRIBUTION
from grader.sandbox.exposure import ANSWER_KEY_PARTS, answer_key_exposure, readable_by_others  # noqa: F401
from grader.sandbox.runs import Limits

ROOT = Path(__file__).resolve().parents[2]
REPORT_FILES = ("results.json", "feedback.md", "feedback.html")
# torch pinned and CPU-only: the build the kit is tested with (an unpinned torch pulls CUDA).
TORCH_REQUIREMENT = "torch==2.13.0"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
SUBMISSION_NAME = "submission"  # how reports name an upload on a grading platform
# Seconds a grading job may spend before the submission's probes start (the workers and the
# reference outputs) and after they end (the reports): measured 6-12 s in a fresh container.
STARTUP_SECONDS = 30


# -- the kit, as shipped to a platform ---------------------------------------------------------


def runtime_requirements() -> list[str]:
    """The kit's runtime dependencies as pip requirement strings, from the installed package's
    metadata (pyproject.toml's `dependencies`; no extra's), without torch (installed first, pinned,
    from the CPU index)."""
    requires = importlib.metadata.requires(DISTRIBUTION) or []
    runtime = [r for r in requires if "extra ==" not in r.partition(";")[2]]
    return [r for r in runtime if re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0].lower() != "torch"]


# -- an upload ---------------------------------------------------------------------------------


def locate_submission(upload: Path) -> Path | None:
    """The folder of an upload that holds the modules (the upload itself, or the shallowest folder
    inside it that does), found by the kit's intake: only real folders are entered, never a link,
    not even the upload itself. Reading the files is the intake's job too."""
    return find_upload(upload, follow_root=False)


@dataclass
class Graded:
    """One upload graded: the kit's results.json document, its feedback.md, the record itself and the
    sandbox protections that were missing on this machine."""

    document: dict
    feedback_md: str
    result: GradeResult
    protections: list[IntegrityNote] = field(default_factory=list)


def limits_within(seconds: float) -> Limits:
    """The sandbox's limits for a platform that stops the whole grading job after `seconds`: the
    submission's own time is what is left after STARTUP_SECONDS, shared by the modules, so that
    a submission that sleeps or loops in every module still gets its results in time."""
    default = Limits()
    submission = max(10.0, min(default.submission_seconds, seconds - STARTUP_SECONDS))
    module = min(default.module_seconds, math.floor(submission / len(MODULES) * 10) / 10)
    return replace(
        default,
        submission_seconds=submission,
        module_seconds=module,
        probe_wall_seconds=min(default.probe_wall_seconds, module),
    )


def grade_upload(folder: Path, *, lang: str, report_copy: Path | None = None, limits: Limits = Limits()) -> Graded:
    """Grade one upload (the platform's folder of it) with `grader.run.grade`, named "submission" in
    its reports: always one student's submission, never a class nor an LMS download, whatever its
    file and folder names look like (`hw_3_1_attention.ipynb`, a zip of `ch3/` and `ch3_backup/`).

    The reports (and the reference outputs the runner caches beside them) are written to a fresh
    folder of mode 0700: no sandboxed child, whatever its uid, can look into it. `report_copy`
    receives results.json, feedback.md and feedback.html once grading is over."""
    from grader.run import grade  # the grading run and its sandbox: not loaded to build a zip or a question

    with tempfile.TemporaryDirectory(prefix="attention-kit-report-") as private:
        out = Path(private) / "report"
        summary = grade(folder, out, jobs=1, lang=lang, force=True, name=SUBMISSION_NAME, limits=limits, upload=True)
        document = json.loads((out / "results.json").read_text(encoding="utf-8"))
        feedback = out / "feedback.md"
        feedback_md = feedback.read_text(encoding="utf-8") if feedback.exists() else ""
        if report_copy is not None:
            report_copy.mkdir(parents=True, exist_ok=True)
            for name in REPORT_FILES:
                if (out / name).exists():
                    shutil.copyfile(out / name, report_copy / name)
    return Graded(document, feedback_md, summary.results[0], list(summary.protections))


def restrict_to_owner(path: Path) -> None:
    """Make a platform's folder (e.g. /autograder, /grade) reachable by its owner only: student code,
    running under the sandbox's own uid, then sees nothing of it (its files reach the sandbox as
    data, through the kit's intake). Best effort: what could not be done shows in the check below."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            os.chmod(path, 0o700)
    except OSError:
        pass


def protection_lines(
    graded_protections: list[IntegrityNote], exposure: list[IntegrityNote], catalog: Catalog
) -> list[str]:
    """For the instructor (a platform's log): each protection that is missing, in words, or one line
    saying that all of them are in place."""
    notes = list({(n.kind, n.detail): n for n in [*graded_protections, *exposure]}.values())  # each once
    if not notes:
        return [catalog.t("deploy.all-protections")]
    return [
        catalog.t("deploy.protection-missing", what=catalog.t(f"integrity.{n.kind}", detail=n.detail)) for n in notes
    ]
