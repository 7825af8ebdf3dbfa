"""What every chapter 3 check list is made of, whatever the framework: the registry of checks and
the ways a check says that something is not as the exercise asks.

A check list (ch3_check_list.py: PyTorch's, or the MindSpore edition's) registers its checks with
`CHECKS.check(module, key)` and provides `framework()` (the library its checks get, set up for
them) and `seeded(library)` (a context in which each check runs with the same random state).
ch3_checks.py runs them and reports.
"""

from __future__ import annotations


class CheckList(list):
    """(module, message key, function(code, library), probe) in book order. `probe` names the value
    probe (ch3_check_list.PROBES) whose diagnosis explains a failure of the check: the cause it
    names and the line where the student's computation departs from the reference."""

    def check(self, module, key, probe=None):
        def register(fn):
            self.append((module, key, fn, probe))
            return fn

        return register


class Mismatch(Exception):
    """`what` (code, the same in every language) was not as expected. `expected` and `actual`
    are text, or (message key, params) pairs translated when shown; `hint` names a hint of
    check_messages.json ("hints.<hint>") that says what to change; `cause` a misconception the
    check itself recognised ("causes.<cause>", with its hint); `probe` the value probe whose
    diagnosis explains the failure (by default the check's own)."""

    def __init__(self, what, expected, actual, hint=None, cause=None, probe=None):
        super().__init__(what)
        self.what, self.expected, self.actual, self.hint = what, expected, actual, hint
        self.cause, self.probe = cause, probe


class Undefined(Exception):
    """The student's code does not define a name a check needs; `key` is the message saying so."""

    def __init__(self, module, name, key="undefined"):
        super().__init__(name)
        self.module, self.name, self.key = module, name, key


def phrase(key, **params):
    return ("phrases." + key, params)


def fmt(value):
    """A short, language-neutral rendering of a number, tensor, array or tuple."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(fmt(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    return str(value)


def expect_refusal(what, valid, invalid):
    """`invalid()` must raise, as the exercise asks (`what` shows the call); `valid()` runs first,
    so that an error there is reported as the mistake it is, not taken for a refusal."""
    valid()
    try:
        invalid()
    except (NotImplementedError, Undefined):
        raise
    except Exception:  # noqa: BLE001 - any exception counts as refusing
        return
    raise Mismatch(what, phrase("an-error"), phrase("no-error"))
