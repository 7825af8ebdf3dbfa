"""Chapter 3 self-check: the public checks, on your .py files or your notebooks.

Run it in this folder:  python check.py                     (checks the code in exercises/)
                        python check.py MY_FOLDER           (.py files or notebooks in another folder)
                        python check.py my_work.ipynb       (one notebook)
                        python check.py --lang zh           (messages in Chinese)

Your code is found by the same rules as the grader's (_kit/ holds a copy of the grader's code
that reads submissions): the seven .py files, or notebooks named like them, or one notebook for
the chapter whose code cells start with `# module: <name>`. Passing these checks does not
guarantee full marks: the grader checks much more.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from ch3_checks import (
    MODULES,
    Code,
    Frame,
    Messages,
    Unavailable,
    framework,
    hint_for,
    one_line,
    render,
    run_checks,
    student_frame,
)

HERE = Path(__file__).resolve().parent
KIT = HERE / "_kit"


def kit(name):
    """A function or class of the grader's own intake or stand-ins, from the copy in _kit/."""
    sys.path.insert(0, str(KIT))
    try:
        from grader import stand_ins
        from grader.intake import discovery, notebook_cells
    finally:
        sys.path.remove(str(KIT))
    return {
        "read_submission": discovery.read_submission,
        "origin_at": notebook_cells.origin_at,
        "StandInFinder": stand_ins.StandInFinder,
        "StandInModule": stand_ins.StandInModule,
        "EarlierModuleBroken": stand_ins.EarlierModuleBroken,
    }[name]


def read_submission(folder):
    """The grader's own reading of a submission folder: a Submission with .sources, .origins and .problems."""
    return kit("read_submission")(folder)


class Locator:
    """Names a place in the student's code the way they see it: a .py file's line, or a notebook's
    cell and line (from where the intake says each line of a module made from a notebook came from)."""

    def __init__(self, modules_dir, origins, t):
        self.modules_dir, self.origins, self.t = modules_dir, origins, t
        self.origin_at = kit("origin_at")  # now, before the student's code runs

    def in_chapter_notebook(self, frame):
        """Whether `frame` is in a module made from a chapter notebook (not one named like the module)."""
        path = Path(frame.filename)
        runs = self.origins.get(path.stem) if path.parent == self.modules_dir else None
        origin = self.origin_at(runs, frame.line) if runs and isinstance(frame.line, int) and frame.line > 0 else None
        return origin is not None and origin.notebook != f"{path.stem}.ipynb"

    def __call__(self, frame):
        path = Path(frame.filename)
        if path.parent != self.modules_dir:
            return self.t("where", file=path.name, line=frame.line)
        module = path.stem
        runs = self.origins.get(module)
        if not runs:  # a .py file
            return self.t("where", file=f"{module}.py", line=frame.line)
        origin = self.origin_at(runs, frame.line) if isinstance(frame.line, int) and frame.line > 0 else None
        if origin is None:  # a line the intake added (an import of an earlier module)
            return self.t("where-module", module=module)
        return self.t("where-notebook", notebook=origin.notebook, cell=origin.cell, line=origin.line)


def load(module, modules_dir, locate, code_of, direct=None):
    """The student's module imported from its source, or why it cannot be. `direct`: the modules
    imported for their own checks (an import by another module gets a stand-in when it fails)."""
    if not (modules_dir / f"{module}.py").is_file():
        return Unavailable("missing-module", module=module)
    if isinstance(sys.modules.get(module), kit("StandInModule")):
        del sys.modules[module]  # a stand-in another module got: its own checks see why it does not import
    if direct is not None:
        direct.add(module)
    try:
        return Code(module, vars(importlib.import_module(module)), code_of)
    except KeyboardInterrupt:
        raise
    except SyntaxError as exc:
        frame = Frame(exc.filename or "", exc.lineno or 0, "", (exc.text or "").strip())
        error = f"SyntaxError: {exc.msg}"
        where = (
            locate(frame) if exc.filename and exc.lineno else locate.t("where-module", module=module)
        )  # no line: null bytes
        return Unavailable(
            "import-error", code=frame.code, module=module, error=error, where=where, hint=hint_for(error)
        )
    except BaseException as exc:  # noqa: BLE001 - a student's import may raise anything, even SystemExit
        if isinstance(exc, ValueError) and "null bytes" in str(exc):  # older Pythons: a SyntaxError in newer ones
            error = one_line(exc)
            return Unavailable(
                "import-error",
                module=module,
                error=error,
                where=locate.t("where-module", module=module),
                hint=hint_for(error),
            )
        frame, error = student_frame(exc), one_line(exc)
        hint = hint_for(error)
        if isinstance(exc, NameError) and frame and locate.in_chapter_notebook(frame):
            hint = "notebook-scratch-name"  # defined by a statement of a cell that is not part of any module
        return Unavailable(
            "import-error",
            code=frame.code if frame else "",
            module=module,
            error=error,
            where=locate(frame) if frame else module,
            hint=hint,
        )


class DoesNotImport(Exception):
    """Why a module another module imports cannot be used: its Unavailable (what its checks say)."""

    def __init__(self, why):
        super().__init__(why.key)
        self.why = why


def stand_in_finder(modules_dir, direct, codes):
    """The grader's stand-ins (docs/grading-policy.md): a module that imports one of the exercise's
    modules that does not import still imports, and only what uses the names it took fails."""
    failures = {}

    def failure(module):
        if isinstance(codes.get(module), Unavailable):
            return DoesNotImport(codes[module])
        if module in failures:
            return failures[module]
        if (modules_dir / f"{module}.py").is_file():
            return None
        return DoesNotImport(Unavailable("missing-module", module=module))

    def failed(module, exc):
        failures[module] = exc
        return exc

    return kit("StandInFinder")(str(modules_dir), frozenset(MODULES), direct, failure, failed)


def near_miss(miss, t):
    """A name that looks like one the exercise asks for, with both names and where it is."""
    if miss.cell:
        where = t("found.where-cell", notebook=miss.file, cell=miss.cell, line=miss.line)
    else:
        where = t("found.where-file", file=miss.file, line=miss.line)
    kind = miss.kind if miss.kind in ("name", "method", "keyword") else "name"
    section = t("section." + miss.module)
    params = {"found": f"`{miss.found}`", "wanted": miss.wanted, "owner": miss.owner, "where": where}
    return t("found.near-miss." + kind, section=section, **params)


def check_folder(folder, t, modules=MODULES):
    """Run the public checks of `modules` on the code in `folder`; returns (results, problems)."""
    submission = read_submission(folder)
    problems = [
        t("integrity." + note.kind, detail=note.detail)
        if t.has("integrity." + note.kind)
        else f"{note.kind}: {note.detail}"
        for note in submission.problems
    ]
    problems += [near_miss(miss, t) for miss in submission.intake.near_misses]
    with tempfile.TemporaryDirectory(prefix="ch3-check-") as scratch:
        modules_dir = Path(scratch).resolve()
        for module, source in submission.sources.items():
            if module in MODULES:
                (modules_dir / f"{module}.py").write_text(source, encoding="utf-8")
        locate = Locator(modules_dir, submission.origins, t)
        codes, direct = {}, set()

        def code_of(module):
            if module not in codes:
                codes[module] = load(module, modules_dir, locate, code_of, direct)
                direct.discard(module)
            return codes[module]

        for module in MODULES:
            sys.modules.pop(module, None)
        sys.path.insert(0, str(modules_dir))
        finder = stand_in_finder(modules_dir, direct, codes)
        sys.meta_path.insert(0, finder)
        streams = sys.stdout, sys.stderr  # the student's code may replace them; the report needs them
        try:
            results = run_checks(code_of, t, locate, modules, stand_ins=(kit("EarlierModuleBroken"),))
        finally:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            sys.stdout, sys.stderr = streams
            if str(modules_dir) in sys.path:
                sys.path.remove(str(modules_dir))
            for module in MODULES:
                sys.modules.pop(module, None)
    return results, problems


def missing_packages():
    """The packages check.py needs that this Python lacks, the framework first (PyTorch, or
    MindSpore for the MindSpore edition), then jinja2 (the report's layout: PyTorch brings it)."""
    missing = []
    try:
        framework()
    except ImportError as exc:
        missing.append(exc.name or "torch")
    try:
        import jinja2  # noqa: F401
    except ImportError:
        missing.append("jinja2")
    return missing


def needs_packages(missing, t):
    """One message naming every missing package."""
    names = t("and-list", first=", ".join(missing[:-1]), last=missing[-1]) if len(missing) > 1 else missing[0]
    them = t("them") if len(missing) > 1 else t("it")
    return t("needs-packages", packages=names, them=them, install=" ".join(missing))


def main(argv=None):
    languages = [k for k in json.loads((HERE / "check_messages.json").read_text(encoding="utf-8")) if k != "default"]
    parser = argparse.ArgumentParser(description="Chapter 3 self-check")
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=HERE / "exercises",
        help="a folder with your .py files or notebooks, or one notebook (default: exercises/)",
    )
    parser.add_argument("--lang", choices=languages, default=None)
    args = parser.parse_args(argv)
    t = Messages(args.lang)
    path = args.path.resolve()
    if not path.exists():
        sys.stderr.write(t("no-such-path", path=args.path) + "\n")
        return 2
    missing = missing_packages()
    if missing:
        sys.stderr.write(needs_packages(missing, t) + "\n")
        return 2
    try:
        if path.is_file():
            with tempfile.TemporaryDirectory(prefix="ch3-check-") as scratch:
                folder = Path(scratch)
                shutil.copy(path, folder / path.name)
                results, problems = check_folder(folder, t)
        else:
            results, problems = check_folder(path, t)
    except KeyboardInterrupt:  # Ctrl-C (a loop of the student's code that does not end), or their code raised it
        sys.stderr.write("\n" + t("interrupted") + "\n")
        return 130
    report = render(results, t, folder=path, problems=problems)
    sys.stdout.buffer.write((report + "\n").encode("utf-8"))
    sys.stdout.flush()
    return 0 if all(r["status"] == "pass" for r in results) else 1


if __name__ == "__main__":
    status = main()
    if threading.active_count() > 1:  # a thread the student's code started would keep check.py from ending
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
