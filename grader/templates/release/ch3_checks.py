"""Chapter 3 public checks: running them and reporting, each failure with its reason.

In a notebook (the test cells of the course's notebook do this):

    from ch3_checks import check_section
    check_section("sec3_5_causal_attention", globals())

check.py runs every check on the .py files or notebooks of a folder. The checks themselves are in
ch3_check_list.py (PyTorch's or the MindSpore edition's: the same runner and report for both);
messages come from check_messages.json and the report's layout from check_report.txt.j2, all
beside this file.
"""

from __future__ import annotations

import importlib
import inspect
import json
import linecache
import os
import re
import sys
import textwrap
import traceback
from pathlib import Path

import ch3_check_list
import ch3_check_tools
from ch3_check_diagnosis import diagnose, explained
from ch3_check_list import CHECKS, HINTS, MODULES, framework, seeded
from ch3_check_tools import Mismatch, Undefined

if ch3_check_list.VALUE_CHECKS:  # the edition's value checks, registered after its other checks
    importlib.import_module(ch3_check_list.VALUE_CHECKS)
HERE = Path(__file__).resolve().parent
MARKS = {"pass": "✔", "fail": "✘", "todo": "…"}
OWN_FILES = {
    os.path.abspath(f)
    for f in (__file__, ch3_check_list.__file__, ch3_check_tools.__file__, HERE / "check.py")
    if f is not None
} | {os.path.abspath(HERE / f"ch3_check_{name}.py") for name in ("values", "trace", "diagnosis", "sections")}


class Code:
    """A student's module, or a notebook's namespace, as the checks see it: a name it does not
    define is reported as such, not as an AttributeError of the checks."""

    def __init__(self, module, namespace, code_of=None, undefined="undefined"):
        self._module, self._namespace, self._code_of, self._undefined = module, namespace, code_of, undefined
        self._used = []  # what the checks took from it, in order: where a mismatch points

    def _sibling(self, module):
        """Another of the student's modules (a notebook has one namespace for all of them)."""
        code = self._code_of(module) if self._code_of else self
        if isinstance(code, Unavailable):
            raise Blocked(module, code)
        return code

    def __getattr__(self, name):
        try:
            value = self._namespace[name]
        except KeyError:
            raise Undefined(self._module, name, self._undefined) from None
        self._used.append(value)
        return value


class Unavailable:
    """A module the checks cannot use: why, as (message key, params), the line of code at fault and
    the check list's hint for the error, if any."""

    def __init__(self, key, code="", hint=None, **params):
        self.key, self.params, self.code, self.hint = key, params, code, hint


class Messages:
    def __init__(self, lang=None, path=None):
        data = json.loads(Path(path or HERE / "check_messages.json").read_text(encoding="utf-8"))
        self.lang = lang if lang in data and lang != "default" else data.get("default", "en")
        self.messages, self.fallback = data.get(self.lang, {}), data["en"]

    def has(self, key):
        return key in self.messages or key in self.fallback

    def __call__(self, key, **params):
        text = self.messages.get(key, self.fallback.get(key, key))
        try:
            return text.format(**params)
        except (KeyError, IndexError, ValueError):
            return text

    def show(self, value):
        return self(value[0], **value[1]) if isinstance(value, tuple) else str(value)


class Blocked(Exception):
    """A check needs another of the student's modules, which the checks cannot use."""

    def __init__(self, module, why):
        super().__init__(module)
        self.module, self.why = module, why


class Frame:
    """Where in the student's code something happened."""

    def __init__(self, filename, line, function, code):
        self.filename, self.line, self.function, self.code = filename, line, function, code


def _library(filename):
    """Not the student's: these checks, Python's own library and installed packages (torch too,
    wherever pip put it)."""
    if filename.startswith("<frozen") or os.path.abspath(filename) in OWN_FILES:
        return True
    if {"site-packages", "dist-packages"} & set(Path(filename).parts):
        return True
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    return any(os.path.abspath(filename).startswith(os.path.join(root, "lib", "")) for root in roots if root)


def student_frame(exc):
    """The last traceback frame in the student's code (not in these checks, torch or Python)."""
    found = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if not _library(code.co_filename):
            found = (code.co_filename, line, getattr(code, "co_qualname", code.co_name))
    if found is None:
        return None
    return Frame(*found, linecache.getline(found[0], found[1]).strip()[:120])


def defined_at(value):
    """Where the student's function or class `value` is defined (a Frame), or None. A class that
    defines `forward` is where its forward is (where its computation is), not its `class` line."""
    if inspect.isclass(value) and inspect.isfunction(vars(value).get("forward")):
        value = vars(value)["forward"]
    try:
        if inspect.isclass(value):
            filename, line = inspect.getsourcefile(value), inspect.getsourcelines(value)[1]
        else:
            filename, line = value.__code__.co_filename, value.__code__.co_firstlineno
    except Exception:  # noqa: BLE001 - not the student's function or class (or its source is gone): no place
        return None
    if not filename or _library(filename):
        return None
    return Frame(filename, line, getattr(value, "__name__", ""), linecache.getline(filename, line).strip()[:120])


def one_line(exc):
    """`ErrorType: message`, the message's first line only (MindSpore adds a C++ call stack)."""
    try:
        lines = str(exc).strip().splitlines()
    except BaseException:  # noqa: BLE001 - a student's exception whose __str__ fails (even by exit()) is still reported
        lines = []
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip().rstrip(":")


def with_hint(note, t, hint):
    return t("hint", note=note, hint=t("hints." + hint)) if hint and t.has("hints." + hint) else note


def _own(filename):
    """Whether a file is the student's code (not these checks, torch or Python)."""
    return not _library(filename)


def _frame_at(place, code):
    return Frame(*place, code)


# (pattern of "ErrorType: message", hint key) of any framework; the check list adds its own (HINTS).
# Python's own messages, glossed in plain words (hints.python-*: the catalogues' python-errors.gloss,
# which the grader's reports use for the same messages)
COMMON_HINTS = (
    (r"^(SyntaxError|ValueError): source code (string )?cannot contain null bytes", "not-utf8"),
    (r"^SyntaxError: expected ':'", "python-expected-colon"),
    (r"^SyntaxError: invalid syntax\. Perhaps you forgot a comma", "python-forgot-comma"),
    (r"^SyntaxError: '.' was never closed", "python-never-closed"),
    (r"^SyntaxError: (unmatched '.'|closing parenthesis '.' does not match)", "python-unmatched"),
    (r"^SyntaxError: (unterminated (triple-quoted )?string literal|EOL while scanning)", "python-unterminated-string"),
    (r"^SyntaxError: '(return|yield)' outside function", "python-outside-function"),
    (r"^SyntaxError: unexpected EOF", "python-eof"),
    (r"^(SyntaxError|IndentationError): unexpected indent", "python-unexpected-indent"),
    (r"^(SyntaxError|IndentationError): expected an indented block", "python-expected-indent"),
    (r"^(SyntaxError|IndentationError): unindent does not match", "python-unindent"),
    (r"^(SyntaxError|TabError): inconsistent use of tabs", "python-tabs"),
    (r"^SyntaxError: invalid syntax", "python-invalid-syntax"),
    (r"^(NameError|UnboundLocalError): ", "python-name-not-defined"),
    (r"^ImportError: cannot import name", "python-cannot-import-name"),
    (r"^ModuleNotFoundError: No module named", "python-no-module"),
)


def hint_for(error):
    """The hint for an error of the student's code (a framework's known trap, a file Python cannot read), or None."""
    return next((hint for pattern, hint in (*HINTS, *COMMON_HINTS) if re.search(pattern, error)), None)


def run_checks(code_of, t, locate, modules=MODULES, stand_ins=()):
    """Run the checks of `modules`. `code_of(module)` gives a Code or an Unavailable; `locate(frame)`
    names where a student's frame is; `stand_ins`: the exception types of a name used that was taken
    from a module that does not import (its `.module`). Returns one result per check, in book order."""
    library = framework()
    results, codes = [], {}
    for module, key, fn, probe in sorted(CHECKS, key=lambda entry: MODULES.index(entry[0])):
        if module not in modules:
            continue
        row = {
            "module": module,
            "key": key,
            "section": t("section." + module),
            "text": t("items." + key),
            "status": "fail",
            "note": "",
            "code": "",
        }
        results.append(row)
        first_of_module = module not in codes
        code = codes[module] = code_of(module) if first_of_module else codes[module]
        if isinstance(code, Unavailable):  # said once per module
            row["unavailable"] = True
            row["note"], row["code"] = (
                (with_hint(t(code.key, **code.params), t, code.hint), code.code)
                if first_of_module
                else (t("see-above"), "")
            )
            continue
        used = len(code._used)
        try:
            with seeded(library):  # inside the try: the student's code may have broken the library
                fn(code, library)
            row["status"], row["note"] = "pass", ""
        except Mismatch as exc:
            note = t("reason", what=exc.what, expected=t.show(exc.expected), actual=t.show(exc.actual))
            diagnosis = diagnose(exc.probe or probe, code, library, _own, seeded, cause=exc.cause)
            frame = next(filter(None, map(defined_at, reversed(code._used[used:]))), None)  # the code it checked
            if frame and not diagnosis.place:
                note = t("located", note=note, where=locate(frame))
            row["note"] = note if diagnosis.cause else with_hint(note, t, exc.hint)
            explained(row, diagnosis, t, locate, _frame_at)
        except Undefined as exc:
            row["note"] = t(exc.key, module=exc.module, name=exc.name)
        except Blocked as exc:
            row["note"] = t("blocked", module=exc.module, reason=t(exc.why.key, **exc.why.params))
        except stand_ins as exc:  # the same as a sibling that does not import, by the grader's policy
            why = code_of(exc.module)
            why = why if isinstance(why, Unavailable) else Unavailable("missing-module", module=exc.module)
            row["note"] = t("blocked", module=exc.module, reason=t(why.key, **why.params))
        except NotImplementedError as exc:
            frame = student_frame(exc)
            row["status"], row["line"] = "todo", frame.line if frame else None
            row["note"] = (
                t("not-implemented", function=frame.function, where=locate(frame))
                if frame
                else t("not-implemented-unlocated")
            )
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - report any error of the student's code, even exit()
            frame = student_frame(exc)
            error = one_line(exc)
            note = t("error", error=error, where=locate(frame)) if frame else error
            row["note"] = with_hint(note, t, hint_for(error))
            row["code"] = frame.code if frame else ""
            explained(row, diagnose(probe, code, library, _own, seeded, error=error), t, locate, _frame_at)
    return results


def next_step(results):
    """The index of the one check to work on next, by the grader's rule (the same in every report):
    a module that stops before any check can run first; else the earliest module, in book order,
    with a check that does not pass, and there the check of the function written first in the file
    (a stub's checks wait for its functions in the book's order), else its first that does not pass."""
    failing = [i for i, r in enumerate(results) if r["status"] != "pass"]
    stopped = [i for i in failing if results[i].get("unavailable")]
    if stopped or not failing:
        return stopped[0] if stopped else None
    module = results[failing[0]]["module"]
    here = [i for i in failing if results[i]["module"] == module]
    return min(here, key=lambda i: (results[i].get("line") or float("inf"), i))


def said_once(results, t):
    """The rows as reported: a failing check whose reason is the one the failing check above it
    gave (one mistake breaks several checks) says "the same as above" instead of repeating it."""
    rows, previous, explanation = [], None, None
    for row in results:
        if row["status"] == "fail" and row["note"]:
            said = (row["note"], row["code"])
            row = {**row, "note": t("see-above"), "code": ""} if said == previous else row
            previous = said
        if row["status"] == "fail" and (row.get("cause") or row.get("departs")):
            why = (row.get("cause"), row.get("departs"), row.get("departs_code"))
            if why == explanation:  # the same mistake, the same line: said once
                row = {**row, "cause": t("cause-see-above"), "departs": "", "departs_code": ""}
            explanation = why
        rows.append(row)
    return rows


def render(results, t, **context):
    """The report (check_report.txt.j2 beside this file): a whole folder's with `folder=...`, one
    section's for a notebook test cell otherwise."""
    import jinja2  # PyTorch brings it; check.py says how to install it when it is missing

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE)), trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
    )
    return (
        env.get_template("check_report.txt.j2")
        .render(
            results=said_once(results, t),
            t=t,
            marks=MARKS,
            first=next_step(results),
            passed=sum(r["status"] == "pass" for r in results),
            total=len(results),
            **context,
        )
        .strip("\n")
    )


# -- in a notebook ----------------------------------------------------------------------------------
def wrapped(report, width=82):
    """The report's lines wrapped to `width` columns: `nbgrader validate` cuts longer lines off."""
    lines = []
    for line in report.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        lines += textwrap.wrap(
            line, width, subsequent_indent=indent + "  ", break_long_words=False, break_on_hyphens=False
        ) or [""]
    return lines


class ChecksNotPassed(AssertionError):
    """Raised by a test cell whose public checks do not all pass; shown as the report alone."""

    def __init__(self, report):
        super().__init__(report)
        self.report = report

    def _render_traceback_(self):  # IPython shows these lines instead of a Python traceback
        return wrapped(self.report)


def _notebook_locate(t):
    def locate(frame):
        cell = None
        try:
            shell = get_ipython()
            cell = getattr(shell.compile, "_filename_map", {}).get(frame.filename)
        except NameError:
            pass
        where = t("where-cell", cell=cell) if cell is not None else os.path.basename(frame.filename)
        return t("where", file=where, line=frame.line)

    return locate


def check_section(module, namespace, lang=None):
    """A notebook's test cell: run this section's public checks on the notebook's own definitions.
    Prints the result when every check passes, raises ChecksNotPassed with the reasons otherwise."""
    t = Messages(lang)
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # Under `nbgrader autograde` the course's GradeWithKit preprocessor scores this cell and
        # replaces its output. Reaching this means that it is not configured: fail closed.
        raise RuntimeError(t("not-configured"))
    code = Code(module, namespace, undefined="undefined-in-notebook")
    results = run_checks(lambda name: code, t, _notebook_locate(t), modules=(module,))
    report = render(results, t, section=t("section." + module))
    if next_step(results) is not None:
        raise ChecksNotPassed(report)
    print("\n".join(wrapped(report)))
