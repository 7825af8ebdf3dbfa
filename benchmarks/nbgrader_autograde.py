"""nbgrader autograde: seconds per notebook, for a class of N students and for one student.

    python benchmarks/nbgrader_autograde.py [--students 10] [--run-student-kernel] [--keep DIR]

Writes a course with `grade nbgrader`, runs `nbgrader generate_assignment`, hands in N notebooks
(cycling through a correct one, a buggy one and a blank one, each made unique with a comment so
that nothing is answered from a cache), then times `nbgrader autograde` of the whole class (the
kit grades every submitted copy in one batch) and, afterwards, of one more student alone
(`--student`), which is what re-grading a late submission costs. nbgrader runs as README says:
the venv's nbgrader by its path, in a clean environment. Not part of the test run.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.classroom.nbgrader_autograde import NOTEBOOK_NAME
from grader.classroom.nbgrader_env import tools_dir

ASSIGNMENT = "ch3"


def nbgrader(course: Path, *args: str) -> float:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(course.parent / "home"), "LANG": "C.UTF-8"}
    started = time.perf_counter()
    result = subprocess.run(
        [str(tools_dir() / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=7200
    )
    if result.returncode != 0:
        sys.exit(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return time.perf_counter() - started


def student_notebooks(course: Path) -> list[dict]:
    """A correct, a buggy (softmax over dim 0 in 3.3) and a blank copy of the released notebook."""
    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    release = json.loads((course / "release" / ASSIGNMENT / f"{NOTEBOOK_NAME}.ipynb").read_text())
    solved = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in source["cells"]}

    def filled(edit) -> dict:
        notebook = copy.deepcopy(release)
        for cell in notebook["cells"]:
            grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if cell["metadata"].get("nbgrader", {}).get("solution"):
                cell["source"] = edit(
                    re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", solved[grade_id], flags=re.M)
                )
        return notebook

    return [
        filled(lambda code: code),
        filled(
            lambda code: code.replace(
                "torch.softmax(attention_scores(inputs), dim=-1)", "torch.softmax(attention_scores(inputs), dim=0)"
            )
        ),
        copy.deepcopy(release),
    ]


def hand_in(course: Path, student: str, notebook: dict, index: int) -> None:
    notebook = copy.deepcopy(notebook)
    notebook["cells"].append(
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": f"# copy {index}"}
    )
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{NOTEBOOK_NAME}.ipynb").write_text(json.dumps(notebook))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--run-student-kernel", action="store_true")
    parser.add_argument("--keep", type=Path, help="build the course here and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="nbgrader-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    (base / "home").mkdir(exist_ok=True)
    try:
        flags = ["--run-student-kernel"] if args.run_student_kernel else []
        subprocess.run(
            [str(tools_dir() / "grade"), "nbgrader", "course", *flags],
            cwd=base,
            check=True,
            capture_output=True,
            timeout=600,
        )
        course = base / "course"
        nbgrader(course, "generate_assignment", ASSIGNMENT)
        kinds = student_notebooks(course)
        for index in range(args.students):
            hand_in(course, f"s{index:04d}", kinds[index % len(kinds)], index)
        class_seconds = nbgrader(course, "autograde", ASSIGNMENT)
        hand_in(course, "late", kinds[0], args.students)
        single_seconds = nbgrader(course, "autograde", ASSIGNMENT, "--student", "late")
        mode = "with the student kernel" if args.run_student_kernel else "sandbox only"
        print(
            f"nbgrader autograde ({mode}), {args.students} students: {class_seconds:.1f} s, "
            f"{class_seconds / args.students:.2f} s per notebook"
        )
        print(f"nbgrader autograde of one student alone: {single_seconds:.1f} s")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
