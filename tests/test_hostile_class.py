"""Hostile submissions against the trusted side: reading, names, notebooks, reports (tests/attacks/
intake_class.py builds the class). One `grade` command grades the whole class as README says
(from the kit's folder, so that /proc/self/cwd/solutions is the answer key); each attack must cost
exactly the attacked file, with a note naming it; everyone else is bit-identical to a clean run;
the batch ends with exit 0, a gradebook and a summary; the trusted process's memory stays near a
clean run's."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from grader.intake.names import raw_name, shown_name
from tests.attacks.intake_class import FORMULA_NAMES, GBK_NAME, INJECTION_TYPE, M33, build
from tests.conftest import ROOT

SECRET = "kit-secret-7f3a9c"  # in the grader's environment: must never reach a report
RSS_MARGIN_MB = 300  # the hostile run's peak may exceed the clean run's by this much, at most

GRADE = (
    "import resource, sys\nfrom grader.cli import main\ncode = main(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))\n"
    "sys.exit(code)\n"
)


def run_grade(klass: Path, out: Path, rss_file: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, KIT_SECRET=SECRET)
    return subprocess.run(
        [sys.executable, "-c", GRADE, str(rss_file), str(klass), "--out", str(out), "--quiet", "--jobs", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=1500,
    )


def snapshot(root: Path, *skip: Path) -> dict[str, tuple]:
    """Every entry under `root` (not following links) but `skip` and what is in them: what a run may
    not change."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder) / d not in skip]
        for name in dirs + files:
            path = Path(folder) / name
            if path in skip:
                continue
            info = path.lstat()
            seen[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return seen


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("intake-attacks")
    klass, expect = build(base)
    before = snapshot(base, base / "out", base / "rss")
    run = run_grade(klass, base / "out", base / "rss")
    after = snapshot(base, base / "out", base / "rss")
    clean = base / "clean"
    (clean / "honest").mkdir(parents=True)
    for file in (klass / "honest").iterdir():
        (clean / "honest" / file.name).write_bytes(file.read_bytes())
    clean_run = run_grade(clean, base / "clean-out", base / "clean-rss")
    return {
        "base": base,
        "klass": klass,
        "expect": expect,
        "run": run,
        "out": base / "out",
        "clean_out": base / "clean-out",
        "clean_run": clean_run,
        "unchanged": before == after,
        "rss": int((base / "rss").read_text()),
        "clean_rss": int((base / "clean-rss").read_text()),
    }


def documents(out: Path) -> dict[str, dict]:
    """Student (their folder's name in the class, read back from the name shown) -> results.json."""
    docs = {}
    for path in out.glob("*/results.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["folder"] == path.parent.name
        docs[raw_name(document["submission"])] = document | {"_folder": path.parent.name}
    return docs


def outcomes_of(document: dict) -> dict[str, tuple[str, float]]:
    return {t["id"]: (t["status"], t["points"]) for t in document["tests"]}


def test_the_batch_finishes_with_exit_0_and_every_class_report(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    docs = documents(graded["out"])
    assert set(docs) == set(graded["expect"])  # every student graded, none lost, none extra
    rows = list(csv.reader(io.StringIO((graded["out"] / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 1 + len(graded["expect"])
    summary = (graded["out"] / "summary.html").read_text(encoding="utf-8")
    assert summary.count("<tr>") >= len(graded["expect"]) + 1
    assert graded["unchanged"], "the grader changed something outside its output folder"


@pytest.mark.parametrize(
    "name",
    [
        "link_kit_cwd",
        "link_kit_abs",
        "link_classmate",
        "link_shadow",
        "link_environ",
        "link_mem",
        "fifo",
        "device",
        "hardlink",
        "dir_module",
        "sparse_module",
        "sparse_notebook",
        "json_bomb",
        "container_bomb",
        "worksheets_not_a_list",
        "wrong_types",
        "ast_bomb",
        "helpers",
        "surrogate_notebook",
        "gbk_declared",
        GBK_NAME,
        "gradebook.csv",
        "summary.html",
        "canvas-grades.csv",
        *FORMULA_NAMES,
    ],
)
def test_an_attack_costs_exactly_its_file_and_says_so(graded, name):
    docs = documents(graded["out"])
    expect = graded["expect"][name]
    document = docs[name]
    assert outcomes_of(document) == outcomes_of(docs[expect.same_as])
    assert document["score"] == docs[expect.same_as]["score"]
    notes = {(n["kind"], n["detail"]) for n in document["integrity"]}
    for note in expect.notes:
        assert note in notes
    assert not {kind for kind, _ in notes if not kind.startswith("sandbox.")} - {kind for kind, _ in expect.notes}
    if expect.notes:
        feedback = (graded["out"] / document["_folder"] / "feedback.md").read_text(encoding="utf-8")
        kind, detail = expect.notes[0]
        assert f"`{detail}`" in feedback  # the note names the file, quoted


def test_a_link_into_the_kit_scores_nothing_for_that_section(graded):
    docs = documents(graded["out"])
    document = docs["link_kit_cwd"]
    section = {s["id"]: s for s in document["sections"]}["3.6"]
    assert section["score"] == 0 < section["max_score"]
    feedback = (graded["out"] / "link_kit_cwd" / "feedback.md").read_text(encoding="utf-8")
    assert "`sec3_6_multi_head_attention.py` is a link; links are not graded" in feedback


def test_no_host_file_reaches_any_report(graded):
    shadow = Path("/etc/shadow").read_text(errors="replace").splitlines() if os.access("/etc/shadow", os.R_OK) else []
    secrets = [SECRET] + [line for line in shadow if len(line) > 12]
    for path in graded["out"].rglob("*"):
        if path.is_file() and ".grader-cache" not in path.parts:
            text = path.read_text(encoding="utf-8", errors="replace")
            for secret in secrets:
                assert secret not in text, (path, secret[:8])


def test_a_student_folder_that_is_a_link_is_refused_as_a_whole(graded):
    document = documents(graded["out"])["link_folder"]
    assert document["score"] == 0 and all(t["status"] != "passed" for t in document["tests"])
    assert {"kind": "submission.folder-link", "detail": "link_folder"} in document["integrity"]


def test_other_students_are_bit_identical_to_a_clean_run(graded):
    assert graded["clean_run"].returncode == 0, graded["clean_run"].stderr[-3000:]
    for name in ("results.json", "feedback.md", "feedback.html"):
        assert (graded["out"] / "honest" / name).read_bytes() == (graded["clean_out"] / "honest" / name).read_bytes()


def test_student_names_never_collide_with_class_outputs(graded):
    out = graded["out"]
    assert (out / "gradebook.csv").is_file() and (out / "summary.html").is_file()
    docs = documents(out)
    # a name that cannot be its own folder takes a digest of itself (printf '%s' NAME | sha256sum)
    assert docs["gradebook.csv"]["_folder"] == "gradebook.csv~db3707d1"
    assert docs["summary.html"]["_folder"] == "summary.html~" + hashlib.sha256(b"summary.html").hexdigest()[:8]
    assert docs["canvas-grades.csv"]["_folder"].startswith("canvas-grades.csv~")  # grade export's default file
    assert docs[GBK_NAME]["_folder"] == graded["expect"][GBK_NAME].extra["folder"]


def test_gradebook_cells_are_never_formulas(graded):
    rows = list(csv.reader(io.StringIO((graded["out"] / "gradebook.csv").read_text(encoding="utf-8"))))
    names = [row[0] for row in rows[1:]]
    for name in FORMULA_NAMES:
        assert "'" + shown_name(name) in names
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


class _Text(HTMLParser):
    """Text of an HTML page with, for each piece, whether it sits inside the student's quoted text."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.pieces: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        self.stack.append("student" if "student" in classes.split() or "student-output" in classes.split() else tag)

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        self.pieces.append((data, "student" in self.stack))


def test_injected_text_stays_quoted_student_output(graded):
    folder = graded["out"] / "injection"
    html = (folder / "feedback.html").read_text(encoding="utf-8")
    markdown = (folder / "feedback.md").read_text(encoding="utf-8")
    assert "<img" not in html.lower()
    assert "javascript:" not in re.sub(r"<code[^>]*>.*?</code>|<pre[^>]*>.*?</pre>", "", html, flags=re.S)
    parser = _Text()
    parser.feed(html)
    for text, quoted in parser.pieces:
        if "onerror" in text or "problem of the grader" in text or "javascript" in text:
            assert quoted, text
    md = MarkdownIt("commonmark").enable(["table", "linkify", "strikethrough"])
    md.options["linkify"] = True
    tokens = md.parse(markdown)
    kinds = set()

    def walk(items):
        for token in items:
            kinds.add(token.type)
            if token.type in ("text", "inline") and token.children is None:
                assert "onerror" not in token.content and "problem of the grader" not in token.content, token.content
            if token.children:
                walk(token.children)

    walk(tokens)
    assert not kinds & {"html_block", "html_inline", "image", "link_open"}, kinds
    headings = [t for t in tokens if t.type == "heading_open"]
    assert len(headings) == markdown.count("\n## ") + markdown.count("\n### ") + (markdown.startswith("# "))
    rendered = md.render(markdown)
    assert "<img" not in rendered and "javascript:" not in re.sub(r"<code>.*?</code>", "", rendered, flags=re.S)
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    softmax = {t["id"]: t for t in document["tests"]}[f"{M33}::test_softmax_naive"]
    # The sandbox boundary keeps only identifier characters of an exception's type name.
    safe_type = re.sub(r"[^\w.]", "", INJECTION_TYPE)
    assert softmax["message"].startswith("Your code raised ") and f"`{safe_type}`" in softmax["message"]
    assert "problem of the grader" not in softmax["message"] and "problem of the grader" in softmax["output"]


def test_notebook_feedback_names_the_cell_and_its_line(graded):
    expect = graded["expect"]["notebook_error"].extra
    folder = graded["out"] / "notebook_error"
    html = (folder / "feedback.html").read_text(encoding="utf-8")
    where = (
        f'<code class="student">chapter.ipynb</code>, code cell {expect["cell"]}, line {expect["line"]}, in '
        f'<code class="student">softmax_naive</code>:'
    )
    assert where in html
    assert "sec3_3_simple_attention.py, line" not in html


def test_a_syntax_error_in_a_notebook_names_the_cell_in_every_place(graded):
    expect = graded["expect"]["notebook_syntax"].extra
    folder = graded["out"] / "notebook_syntax"
    html = (folder / "feedback.html").read_text(encoding="utf-8")
    assert f'<code class="student">chapter.ipynb</code>, code cell {expect["cell"]}, line {expect["line"]}' in html
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    outputs = {t["output"] for t in document["tests"] if t["id"].startswith(M33)}
    assert any(f"(chapter.ipynb, code cell {expect['cell']}, line {expect['line']})" in o for o in outputs), outputs
    assert not any("sec3_3_simple_attention.py, line" in o for o in outputs)


def test_nan_and_infinite_results_are_drawn(graded):
    folder = graded["out"] / "nan_weights"
    html = (folder / "feedback.html").read_text(encoding="utf-8")
    assert ">nan</text>" in html and ">inf</text>" in html
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"), parse_constant=_no_nan)
    assert document["score"] < document["max_score"]


def _no_nan(value: str):
    raise AssertionError(f"results.json holds {value}: not strict JSON")


def test_the_trusted_process_stays_near_a_clean_runs_memory(graded):
    assert graded["rss"] <= graded["clean_rss"] + RSS_MARGIN_MB, (graded["rss"], graded["clean_rss"])


def test_a_rerun_reuses_every_result_and_repeats_nothing(graded, tmp_path):
    rerun = run_grade(graded["klass"], graded["out"], tmp_path / "rss")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"({len(graded['expect'])} graded now" not in rerun.stdout
    assert "0 graded now" in rerun.stdout
