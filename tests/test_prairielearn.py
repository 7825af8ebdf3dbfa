"""The PrairieLearn external grader: the question `grade prairielearn` writes, its image recipe, and
its entrypoint run end to end on a faithful /grade layout with a correct, a buggy, an unparseable and
a hostile submission; every results.json is validated against PrairieLearn's documented format.

No Docker engine runs here. The Dockerfile is checked piece by piece (its instructions, what it copies
where), and the image's filesystem is rebuilt under a temporary root by executing its own steps: the
kit's wheel installed into opt/attention-kit, the answer key's outputs computed, the permission step;
/grade as PrairieLearn mounts it, and a Python that holds the kit's dependencies but not the kit.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import uuid
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import records
from grader.classroom.deployment import (
    STARTUP_SECONDS,
    Graded,
    answer_key_exposure,
    limits_within,
    readable_by_others,
    runtime_requirements,
)
from grader.classroom.kit_wheel import wheel_name
from grader.classroom.prairielearn import MAX_RESULTS_BYTES, MAX_TIMEOUT, MIN_TIMEOUT, run, to_prairielearn
from grader.classroom.prairielearn_question import DEFAULT_TIMEOUT, ENTRYPOINT, KIT_DIR, QUESTION_ID, WHEEL_STAGE
from grader.i18n import Catalog
from grader.records import MODULES, GradeResult, ProbeError, SectionScore, StudentFrame
from grader.sandbox.pool import Limits
from tests.buggy import buggy
from tests.platforms import (
    NO_BWRAP_PATH,
    ROOT,
    WITHOUT_NAMESPACES,
    answer_key_lines,
    deps_only_python,
    environment,
    hunter_source,
    open_root,
    remove_root,
    sibling_imports,
)

IMAGE = "course-staff/attention-kit-grader:1.0"

# PrairieLearn's results.json, as documented in docs/externalGrading.md ("Grading results"): `score`
# in [0, 1] is the only mandatory field of a gradable submission; `gradable: false` needs no score and
# may carry `format_errors` (a string or a list of strings); `message`, `output`, `images` (objects with
# a `url`, typically a base64 data URL, and an optional `label`, or plain URL strings) and `tests`
# (name, description, points, max_points, message, output, images) are optional. The kit always
# writes name, points, max_points and output for every test (what pl-external-grader-results needs to
# show points), so the schema requires them.
IMAGE_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["url"],
            "additionalProperties": False,
            "properties": {
                "url": {"type": "string", "pattern": r"^data:image/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]+$"},
                "label": {"type": "string"},
            },
        },
        {"type": "string"},
    ]
}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "format_errors": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": {"type": "array", "items": IMAGE_SCHEMA},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "points", "max_points", "output"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "points": {"type": "number", "minimum": 0},
                    "max_points": {"type": "number", "minimum": 0},
                    "message": {"type": "string"},
                    "output": {"type": "string"},
                    "images": {"type": "array", "items": IMAGE_SCHEMA},
                },
            },
        },
    },
    "if": {"properties": {"gradable": {"const": False}}, "required": ["gradable"]},
    "then": {"required": ["gradable", "format_errors"]},
    "else": {"required": ["score"]},
}


def check_results(results: dict, raw: bytes | None = None) -> None:
    """results.json as PrairieLearn documents it, within its 1 MB, every test's points within its maximum."""
    jsonschema.validate(results, RESULTS_SCHEMA)
    raw = raw if raw is not None else json.dumps(results, indent=2, ensure_ascii=False).encode("utf-8")
    assert len(raw) <= MAX_RESULTS_BYTES
    for test in results.get("tests", []):
        assert test["points"] <= test["max_points"]


# -- the question and the image recipe -------------------------------------------------------------


def write(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "prairielearn", str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("pl") / "course-files"
    result = write(out, "--image", IMAGE)
    assert result.returncode == 0, result.stderr
    assert "questions/attention-ch3" in result.stdout and "README.md" in result.stdout
    return out


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


def test_info_json_enables_external_grading_with_the_image(written):
    info = json.loads((written / "questions" / QUESTION_ID / "info.json").read_text())
    assert uuid.UUID(info["uuid"]).version == 4
    assert info["type"] == "v3" and info["gradingMethod"] == "External" and info["singleVariant"] is True
    options = info["externalGradingOptions"]
    # the keys infoQuestion.ts's ExternalGradingOptionsJsonSchema allows (it is a strict object)
    assert set(options) <= {
        "comment",
        "enabled",
        "image",
        "entrypoint",
        "serverFilesCourse",
        "timeout",
        "enableNetworking",
        "environment",
    }
    assert options == {
        "enabled": True,
        "image": IMAGE,
        "entrypoint": ENTRYPOINT,
        "timeout": DEFAULT_TIMEOUT,
        "enableNetworking": False,
    }
    assert json.loads((written / "questions" / QUESTION_ID / "tests" / "attention-kit.json").read_text()) == {
        "lang": "en",
        "timeout": DEFAULT_TIMEOUT,
    }


def test_question_html_takes_the_seven_modules_or_notebooks(written):
    html = (written / "questions" / QUESTION_ID / "question.html").read_text()
    found = elements(html)
    upload = [attrs for tag, attrs in found if tag == "pl-file-upload"]
    assert len(upload) == 1
    names = [name.strip() for name in upload[0]["optional-file-names"].split(",")]
    assert names == [f"{m}.py" for m in MODULES] + [f"{m}.ipynb" for m in MODULES]
    assert upload[0]["optional-file-patterns"] == "*.ipynb"
    tags = [tag for tag, _ in found]
    assert tags.index("pl-submission-panel") < tags.index("pl-external-grader-results")


def test_the_question_asks_for_no_module_lines_in_a_chapter_notebook(written):
    """A chapter notebook is read by the names it defines: no cell needs a `# module:` line."""
    assert "# module:" not in (written / "questions" / QUESTION_ID / "question.html").read_text()
    for lang in ("en", "zh"):
        assert "# module:" not in Catalog(lang).t("prairielearn.question.notebooks")


def test_editors_start_from_the_stubs_and_a_rewrite_keeps_the_uuid(written, tmp_path):
    out = tmp_path / "editors"
    assert write(out, "--submit", "editors", "--lang", "zh", "--timeout", "300").returncode == 0
    question = out / "questions" / QUESTION_ID
    first = json.loads((question / "info.json").read_text())
    editors = [attrs for tag, attrs in elements((question / "question.html").read_text()) if tag == "pl-file-editor"]
    assert [e["file-name"] for e in editors] == [f"{m}.py" for m in MODULES]
    for editor in editors:
        stub = question / editor["directory"] / editor["source-file-name"]
        assert stub.read_text() == (ROOT / "grader" / "exercises" / editor["file-name"]).read_text()
    assert "第 3 章" in first["title"] and first["externalGradingOptions"]["timeout"] == 300
    assert write(out, "--submit", "upload").returncode == 0
    again = json.loads((question / "info.json").read_text())
    assert again["uuid"] == first["uuid"] and not (question / "stubs").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--image", "Not An Image"], "Docker image"),
        (["--timeout", "601"], "600"),
        (["--timeout", "0"], "90"),
        (["--timeout", "89"], "90"),
    ],
)
def test_bad_options_are_refused_clearly(tmp_path, args, words):
    result = write(tmp_path / "out", *args)
    assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr


def test_the_question_folder_holds_no_answer_key(written):
    secret = answer_key_lines()
    for file in (written / "questions").rglob("*"):
        if file.is_file():
            text = file.read_text(encoding="utf-8")
            assert not [line for line in secret if line in text], file
    image = written / "grader-image"  # the kit is there as its wheel only: no copy of its tree
    image_files = sorted(p.relative_to(image).as_posix() for p in image.rglob("*"))
    assert image_files == sorted(["Dockerfile", "attention-kit-grade", "requirements.txt", wheel_name()])


def dockerfile(written: Path) -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = (written / "grader-image" / "Dockerfile").read_text()
    text = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in text.splitlines() if line.strip()
    ]


def test_dockerfile_installs_dependencies_only_and_locks_the_kit(written):
    steps = dockerfile(written)
    assert steps[0] == ("FROM", "python:3.11-slim-bookworm")
    runs = [args for instruction, args in steps if instruction == "RUN"]
    copies = [args.split() for instruction, args in steps if instruction == "COPY"]
    assert "USER" not in [instruction for instruction, _ in steps]  # root: the sandbox's uid separation needs it
    assert any("bubblewrap" in run and "apt-get install" in run for run in runs)
    assert any("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in run for run in runs)
    assert ["requirements.txt", "/tmp/attention-kit-requirements.txt"] in copies
    assert (written / "grader-image" / "requirements.txt").read_text().split() == runtime_requirements()
    assert "torch" not in " ".join(runtime_requirements())
    pip_runs = [run for run in runs if "pip install" in run]
    dependencies = [run for run in pip_runs if wheel_name() not in run]
    assert all(KIT_DIR not in run and " ." not in run and "-e " not in run for run in dependencies)  # never the kit
    assert [c for c in copies if c[0] != "requirements.txt" and c[1] != ENTRYPOINT] == [
        [wheel_name(), f"{WHEEL_STAGE}/"]
    ]  # the kit arrives as its wheel, and only there
    (install,) = [run for run in pip_runs if wheel_name() in run]
    assert f"pip install --no-deps --no-index --target {KIT_DIR} {WHEEL_STAGE}/{wheel_name()}" in install
    assert f"rm -r {WHEEL_STAGE}" in install  # the wheel is not kept in the image's filesystem
    lock = [run for run in runs if f"chmod -R go-rwx {KIT_DIR}" in run]
    assert len(lock) == 1 and f"chown -R root:root {KIT_DIR}" in lock[0]
    order = [args for _, args in steps]
    assert order.index(lock[0]) > order.index(install)  # locked after it is installed
    assert ["attention-kit-grade", ENTRYPOINT] in copies and f"chmod 0755 {ENTRYPOINT}" in runs
    assert subprocess.run(["sh", "-n", str(written / "grader-image" / "attention-kit-grade")]).returncode == 0


@pytest.fixture(scope="module")
def deps_python():
    """A Python with the kit's dependencies but not the kit, readable by all as a platform's is."""
    venv_root = open_root("attention-kit-venv-")
    yield deps_only_python(venv_root / "deps-only")
    remove_root(venv_root)


def run_steps(written: Path, root: Path, python: Path, chosen) -> None:
    """Execute the Dockerfile's RUN lines that `chosen` picks, as written, with its paths moved under ROOT
    and `python` the image's Python."""
    for instruction, args in dockerfile(written):
        if instruction == "RUN" and chosen(args):
            for place in (KIT_DIR, WHEEL_STAGE):
                args = args.replace(place, str(root / place.lstrip("/")))
            env = {"PATH": f"{python.parent}:/usr/bin:/bin"}
            done = subprocess.run(["sh", "-c", args], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def built(written, deps_python):
    """The image's kit as the Dockerfile builds it, before its permission step: its wheel COPYed to
    the stage folder, then the RUN lines that install it and compute the answer key's outputs."""
    root = open_root("attention-kit-pl-image-")
    (root / WHEEL_STAGE.lstrip("/")).mkdir(parents=True)
    shutil.copy(written / "grader-image" / wheel_name(), root / WHEEL_STAGE.lstrip("/"))
    run_steps(written, root, deps_python, lambda args: wheel_name() in args or "grader.answer_key" in args)
    yield root / KIT_DIR.lstrip("/")
    remove_root(root)


def test_the_image_holds_the_installed_kit_and_its_baked_answer_key(built):
    assert (built / "grader" / "classroom" / "prairielearn.py").is_file() and (built / "solutions").is_dir()
    assert (built / "grader" / "suites" / "hidden" / "pytest.ini").is_file()
    assert list((built / "grader" / ".cache").glob("answer-key-*"))  # computed once, at build time
    assert not (built.parent.parent / WHEEL_STAGE.lstrip("/")).exists()


def image_root(written: Path, built: Path, python: Path, *, locked: bool = True) -> tuple[Path, Path]:
    """The grading container's files under a temporary root: opt/attention-kit as the Dockerfile
    leaves it (the built kit, then its permission step executed as written, on this path), and /grade."""
    root = open_root("attention-kit-pl-")
    kit = root / KIT_DIR.lstrip("/")
    shutil.copytree(built, kit, symlinks=True)
    if locked:
        run_steps(written, root, python, lambda args: "chmod -R go-rwx" in args)
    (root / "grade" / "tests").mkdir(parents=True)
    shutil.copy(written / "questions" / QUESTION_ID / "tests" / "attention-kit.json", root / "grade" / "tests")
    (root / "grade" / "data").mkdir()
    (root / "grade" / "data" / "data.json").write_text('{"params": {}, "submitted_answers": {}}')
    (root / "grade" / "student").mkdir()
    return root, kit


def test_the_dockerfiles_permission_step_puts_the_kit_out_of_reach(written, built, deps_python):
    root, kit = image_root(written, built, deps_python)
    try:
        assert readable_by_others(kit) is None
        assert answer_key_exposure(kit) == []
        open_kit = image_root(written, built, deps_python, locked=False)
        assert readable_by_others(open_kit[1]) is not None
        assert [n.kind for n in answer_key_exposure(open_kit[1])] == ["deploy.kit-readable"]
        remove_root(open_kit[0])
    finally:
        remove_root(root)


# -- the entrypoint, end to end ------------------------------------------------------------------


def submission(kind: str, places: list[str]) -> dict[str, str]:
    files = {f"{m}.py": sibling_imports((ROOT / "solutions" / f"{m}.py").read_text()) for m in MODULES}
    if kind == "buggy":
        files["sec3_5_causal_attention.py"] = buggy("mask-inverted").sources["sec3_5_causal_attention"]
    elif kind == "unparseable":
        files = {f"{m}.py": f"def {m}(:\n    return\n" for m in MODULES}
        files["chapter.ipynb"] = '{"cells": [ {"cell_type": "code", "source": '
    elif kind.startswith("hostile"):
        files["sec3_3_simple_attention.py"] = hunter_source(places)
    elif kind == "empty":
        files = {"notes.txt": "I will hand it in tomorrow."}
    return files


SCENARIOS = {  # name -> (submission, the kit locked as the Dockerfile leaves it, bubblewrap found)
    "correct": ("correct", True, True),
    "buggy": ("buggy", True, True),
    "unparseable": ("unparseable", True, True),
    "empty": ("empty", True, True),
    "hostile": ("hostile", True, False),  # no bubblewrap, as in a container without the privileges it needs
    "hostile-bwrap": ("hostile", True, True),
    "hostile-unlocked": ("hostile", False, False),  # the control: the kit left readable, no bubblewrap
}


@pytest.fixture(scope="module")
def graded(written, built, deps_python):
    python = deps_python
    outcomes = {}
    for name, (kind, locked, bwrap) in SCENARIOS.items():
        root, kit = image_root(written, built, python, locked=locked)
        try:
            for file, text in submission(kind, [str(root), str(kit)]).items():
                (root / "grade" / "student" / file).write_text(text)
            env = environment(ATTENTION_KIT_DIR=str(kit), PYTHON=str(python), GRADE_ROOT=str(root / "grade"))
            prefix = WITHOUT_NAMESPACES if not bwrap else []
            if not bwrap:
                env["PATH"] = NO_BWRAP_PATH
            done = subprocess.run(
                [*prefix, "/bin/sh", str(written / "grader-image" / "attention-kit-grade")],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            raw = (root / "grade" / "results" / "results.json").read_bytes()
            outcomes[name] = {
                "results": json.loads(raw),
                "raw": raw,
                "stdout": done.stdout,
                "grade_mode": (root / "grade").stat().st_mode & 0o777,
            }
        finally:
            remove_root(root)
    return outcomes


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_results_follow_prairielearns_documented_format(graded, scenario):
    outcome = graded[scenario]
    check_results(outcome["results"], outcome["raw"])
    assert outcome["grade_mode"] == 0o700  # /grade was reachable by root only while grading


def test_a_correct_submission_scores_one(graded):
    results = graded["correct"]["results"]
    assert results["gradable"] is True and results["score"] == 1.0
    assert len(results["tests"]) > 30 and all(t["points"] == t["max_points"] for t in results["tests"])
    assert "Protections: all in place" in graded["correct"]["stdout"]


def test_a_buggy_submission_loses_its_sections_points_and_sees_why(graded):
    results = graded["buggy"]["results"]
    assert 0 < results["score"] < 1
    lost = [t for t in results["tests"] if t["points"] < t["max_points"]]
    assert lost and all(t["name"].startswith(("3.5", "3.6", "Ex. 3.2")) for t in lost)  # 3.6 and ex3.2 use 3.5
    assert any(t["name"].startswith("3.5") for t in lost)
    assert any("mask" in (t["message"] + t["output"]).lower() for t in lost)
    pictures = [image for t in lost for image in t.get("images", [])]
    assert pictures, "the attention weights that differ are drawn"
    svg = base64.b64decode(pictures[0]["url"].split(",", 1)[1]).decode()
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and svg.rstrip().endswith("</svg>")


def test_an_unparseable_submission_is_not_gradable_and_says_why(graded):
    results = graded["unparseable"]["results"]
    assert results["gradable"] is False and "score" not in results
    errors = " ".join(results["format_errors"])
    assert "SyntaxError" in errors and "sec3_3_simple_attention.py" in errors and "chapter.ipynb" in errors
    assert "does not count" in results["message"]


def test_an_empty_upload_is_not_gradable(graded):
    results = graded["empty"]["results"]
    assert results["gradable"] is False and "No Chapter 3 module" in results["format_errors"][0]


@pytest.mark.parametrize("scenario", ["hostile", "hostile-bwrap"])
def test_a_hostile_submission_reads_nothing_of_the_kit(graded, scenario):
    outcome = graded[scenario]
    results, text = outcome["results"], outcome["raw"].decode()
    hunted = [t for t in results["tests"] if t["name"].startswith("3.3 ")]
    assert hunted and all(t["points"] == 0 for t in hunted)
    assert "HUNT: nothing" in text and "HUNT: LEAK" not in text
    assert all(t["points"] == t["max_points"] for t in results["tests"] if not t["name"].startswith("3.3 "))
    assert not [line for line in answer_key_lines() if line in text]
    if scenario == "hostile":  # bubblewrap was really off: only the file permissions protected the kit
        assert "bubblewrap" in outcome["stdout"] and "answer key is readable" not in outcome["stdout"]


def test_the_control_the_same_hunt_finds_the_kit_when_it_is_left_readable(graded):
    """Proves that the hunt above can find the answer key: without the Dockerfile's permission step
    and without bubblewrap it does, and the job's output names the missing protection."""
    outcome = graded["hostile-unlocked"]
    assert "HUNT: LEAK" in outcome["raw"].decode()
    assert "answer key is readable" in outcome["stdout"]


# -- results.json whatever the text ----------------------------------------------------------------


def test_a_grader_failure_is_not_gradable_and_says_so(tmp_path, monkeypatch):
    import grader.classroom.prairielearn as prairielearn

    def broken(*args, **kwargs):
        raise RuntimeError("sandbox unavailable")

    monkeypatch.setattr(prairielearn, "grade_upload", broken)
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "sec3_3_simple_attention.py").write_text("x = 1\n")
    result = run(tmp_path)
    assert json.loads((tmp_path / "results" / "results.json").read_text()) == result
    check_results(result)
    assert result["gradable"] is False and "sandbox unavailable" in result["format_errors"][0]
    assert "grader" in result["format_errors"][0]


@pytest.mark.parametrize(
    "config, lang",
    [('{"lang": "zh"}', "zh"), ('{"lang": "fr"}', "en"), ("[1, 2]", "en"), ("not json", "en"), (None, "en")],
)
def test_the_questions_config_chooses_the_language(tmp_path, config, lang):
    (tmp_path / "student").mkdir()
    (tmp_path / "tests").mkdir()
    if config is not None:
        (tmp_path / "tests" / "attention-kit.json").write_text(config)
    result = run(tmp_path)
    assert result["format_errors"] == [Catalog(lang).t("prairielearn.no-submission")]


@pytest.mark.parametrize(
    "config, timeout",
    [
        ('{"timeout": 300}', 300),
        ('{"timeout": "300"}', DEFAULT_TIMEOUT),
        ('{"timeout": 30}', DEFAULT_TIMEOUT),
        ('{"timeout": 100000}', DEFAULT_TIMEOUT),
        ("{}", DEFAULT_TIMEOUT),
    ],
)
def test_the_sandbox_limits_fit_the_questions_timeout(tmp_path, monkeypatch, config, timeout):
    """A submission that sleeps in every module still gets its results before PrairieLearn stops
    the grading job (the question's timeout, recorded beside the language)."""
    import grader.classroom.prairielearn as prairielearn

    seen = []

    def grading(folder, *, lang, limits):
        seen.append(limits)
        raise RuntimeError("stop here")

    monkeypatch.setattr(prairielearn, "grade_upload", grading)
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "sec3_3_simple_attention.py").write_text("x = 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "attention-kit.json").write_text(config)
    run(tmp_path)
    assert seen == [limits_within(timeout)]


@settings(max_examples=200, deadline=None)
@given(st.integers(MIN_TIMEOUT, MAX_TIMEOUT))
def test_the_limits_within_a_timeout_leave_every_module_its_time(timeout):
    """Every timeout a question may have: the submission's time and start-up fit in it, and each
    module gets at least 8 s of wall clock (correct code on a slow host needs well under one)."""
    limits = limits_within(timeout)
    assert len(MODULES) * limits.module_seconds <= limits.submission_seconds <= Limits().submission_seconds
    assert limits.submission_seconds + STARTUP_SECONDS <= timeout
    assert limits.module_seconds >= 8
    assert 0 < limits.probe_wall_seconds <= limits.module_seconds
    if timeout >= STARTUP_SECONDS + Limits().submission_seconds:
        assert limits == Limits()  # a generous timeout: the kit's own limits


def test_a_linked_config_is_not_followed(tmp_path):
    (tmp_path / "student").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "elsewhere.json").write_text('{"lang": "zh"}')
    (tmp_path / "tests" / "attention-kit.json").symlink_to(tmp_path / "elsewhere.json")
    assert run(tmp_path)["format_errors"] == [Catalog("en").t("prairielearn.no-submission")]


_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=400) | st.builds(
    lambda piece, count: piece * count, st.text(max_size=8), st.integers(0, 200_000)
)


def test_syntax_errors_raised_by_imported_code_use_an_attempt():
    """Only a module that fails to parse when imported is "not gradable" (no attempt used); a module
    that imports and whose functions raise SyntaxError would otherwise choose whether an attempt
    counts, a free oracle on the probes' inputs."""

    def result(kind: str) -> GradeResult:
        tests = [
            records.TestOutcome(
                f"{module}::test_x",
                module,
                "test_x",
                "3.5",
                "error",
                0.0,
                1.0,
                "m",
                error=ProbeError(kind=kind, exc_type="SyntaxError", message="invalid syntax", module=module),
            )
            for module in MODULES
        ]
        return GradeResult("s", "hash", 0.0, 7.0, [SectionScore("3.5", "t", 0.0, 7.0)], tests, [])

    assert to_prairielearn(Graded({}, "", result("import"), []), Catalog("en"))["gradable"] is False
    called = to_prairielearn(Graded({}, "", result("exception"), []), Catalog("en"))
    assert called["gradable"] is True and called["score"] == 0.0


@st.composite
def grade_results(draw):
    tests = []
    for i in range(draw(st.integers(1, 70))):
        module = draw(st.sampled_from(MODULES))
        status = draw(st.sampled_from(["passed", "failed", "error", "timeout"]))
        error = None
        if status in ("error", "timeout"):
            error = ProbeError(
                kind=draw(st.sampled_from(["exception", "import", "timeout"])),
                exc_type=draw(st.sampled_from(["ValueError", "SyntaxError", "", "Exception"])),
                message=draw(_TEXT),
                module=module,
                frames=tuple(
                    StudentFrame(draw(_TEXT), draw(st.integers(0, 10**6)), draw(_TEXT), draw(_TEXT))
                    for _ in range(draw(st.integers(0, 2)))
                ),
            )
        max_points = float(draw(st.integers(1, 3)))
        tests.append(
            records.TestOutcome(
                f"{module}::test_{i}",
                module,
                f"test_{i}",
                "3.5",
                status,
                max_points if status == "passed" else 0.0,
                max_points,
                draw(_TEXT),
                error=error,
                misconception=draw(st.sampled_from([None, "mask-inverted", "no-such-id"])),
            )
        )
    score = sum(t.points for t in tests)
    top = sum(t.max_points for t in tests)
    return GradeResult(draw(_TEXT), "hash", score, top, [SectionScore("3.5", draw(_TEXT), score, top)], tests, [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(result=grade_results())
def test_any_grading_gives_a_valid_results_json_within_1_mb(result):
    results = to_prairielearn(Graded({}, "", result, []), Catalog("en"))
    raw = json.dumps(results, indent=2, ensure_ascii=False).encode("utf-8")  # no lone surrogate survives
    check_results(results, raw)
    if results["gradable"]:
        assert results["score"] == pytest.approx(result.score / result.max_score)
