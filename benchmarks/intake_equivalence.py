"""Issue 24's closing numbers, measured by grading:

1. Notebooks as students write them: COUNT notebooks drawn at random (tests/student_notebooks.py's
   `interleavings`: a student of the example class, or the reference; their definitions in book
   order, scratch cells, some failing, Chinese markdown, broken first drafts and cross-cell imports
   anywhere between them), graded in one class beside the same students' .py files: the share of
   notebooks graded exactly like their modules (score, each test's outcome and message, each
   diagnosis and the line it points at); as a control, how many the same comparison tells apart
   from the next student's modules.
2. LMS downloads: the example class as a Canvas and as a Moodle bulk-download zip
   (tests/test_lms_downloads.py's hands: late, re-uploaded, notebook and zip hand-ins): students
   graded (once each), with the folder form's score, with the LMS's id in gradebook.csv and in
   `grade export --lms`.

    python benchmarks/intake_equivalence.py [--count 30] [--seed 0] [--jobs 2]

Prints one JSON document. Not part of the test run (it grades COUNT + 7 + 3 x 6 submissions).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from grader.classroom.lms_export import export
from grader.i18n import Catalog
from grader.run import grade
from tests.conftest import solutions_as_submission
from tests.lms_downloads import canvas_download, moodle_download, write_zip
from tests.student_notebooks import assert_graded_alike, interleavings, module_sources, notebook, write_notebook
from tests.test_lms_downloads import PEOPLE, STUDENTS, USERS, hands

EXAMPLES = ROOT / "examples" / "class"


def drawn_notebooks(count: int, at: int, forms: dict[str, Path]) -> list[tuple[str, list[dict]]]:
    """COUNT (student, cells) drawn by hypothesis from seed AT (generation only, no shrinking)."""
    drawn: list[tuple[str, list[dict]]] = []

    @seed(at)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None)
    @given(data=st.data())
    def draw(data):
        student = data.draw(st.sampled_from(sorted(forms)))
        drawn.append((student, data.draw(interleavings(module_sources(forms[student])))))

    draw()
    return drawn[:count]


def notebooks(base: Path, count: int, at: int, jobs: int) -> dict:
    klass = base / "notebooks"
    forms = {s: shutil.copytree(EXAMPLES / s, klass / f"{s}-py") for s in STUDENTS}
    forms["reference"] = solutions_as_submission(klass / "reference-py")
    names = []
    for index, (student, cells) in enumerate(drawn_notebooks(count, at, forms)):
        name = f"nb{index:03d}-{student}"
        write_notebook(klass / name, notebook(cells))
        names.append((name, student))
    summary = grade(klass, base / "out-notebooks", jobs=jobs, force=True)

    def results(name: str) -> dict:
        return json.loads((summary.out_of[name] / "results.json").read_text(encoding="utf-8"))

    def alike(py: str, name: str) -> str:
        try:
            assert_graded_alike(results(f"{py}-py"), forms[py], results(name), klass / name)
        except AssertionError as exc:
            return str(exc)[:300] or "differs"
        return ""

    differing = [{"notebook": n, "difference": d} for n, s in names if (d := alike(s, n))]
    # the control: each notebook against another student's modules (the comparison must tell them apart)
    others = sorted(forms)
    control = sum(bool(alike(others[(others.index(s) + 1) % len(others)], n)) for n, s in names)
    return {
        "notebooks": len(names),
        "graded_like_modules": len(names) - len(differing),
        "share": (len(names) - len(differing)) / len(names),
        "differing": differing,
        "control_told_apart_from_the_next_students_modules": control,
    }


def downloads(base: Path, jobs: int) -> dict:
    folder = {r.submission: r.score for r in grade(EXAMPLES, base / "out-folder", jobs=jobs, force=True).results}
    out = {}
    for lms, members, people in (
        ("canvas", canvas_download(hands(), USERS), USERS),
        ("moodle", moodle_download(hands(), PEOPLE), PEOPLE),
    ):
        summary = grade(write_zip(base / f"{lms}.zip", members), base / f"out-{lms}", jobs=jobs, force=True)
        scores = {r.submission: r.score for r in summary.results}
        expected = {f"{login}_{number}": folder[s] for s, (login, number) in people.items()}
        rows = list(csv.DictReader(io.StringIO((summary.out_dir / "gradebook.csv").read_text(encoding="utf-8"))))
        done = export(summary.out_dir, lms=lms, assignment="Chapter 3", catalog=Catalog("en"), to=base / f"{lms}.csv")
        out[lms] = {
            "students": len(people),
            "graded": len(summary.results),
            "graded_once": len(scores) == len(summary.results),
            "score_as_folder": sum(scores.get(name) == score for name, score in expected.items()),
            "id_in_gradebook": sum(
                row["lms"] == lms and row["lms_id"] == str(people_id)
                for row in rows
                for _, (login, people_id) in people.items()
                if row["student"] == f"{login}_{people_id}"
            ),
            "export_rows": done.rows,
            "export_without_id": len(done.no_lms_id),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        report = {"generated": notebooks(base, args.count, args.seed, args.jobs), "lms": downloads(base, args.jobs)}
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
