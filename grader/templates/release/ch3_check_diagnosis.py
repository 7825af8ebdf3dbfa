"""Why a public check failed, as far as the public values can tell: the known mistake (the
misconception) whose outputs the student's code reproduces, and the line where the student's
computation departs from the reference.

A failing check names a value probe (ch3_check_values.PROBES). Its inputs are fixed and its weights
known, so check_expected.json (made when the bundle was) holds, for the same inputs, the reference's
output, the outputs of the known mistakes of that function or class and the reference's intermediate
values (never the reference's code). The probe runs again on the student's code under a recorder
(ch3_check_trace.py, PyTorch only): an output equal to a known mistake's names that mistake; the
first intermediate value the output does not pass through, and the student's line there, say where
it departs. When the probe's output is the reference's, nothing more is said: the check failed for
a reason of its own.
"""

from __future__ import annotations

import linecache

PROJECTIONS = {"queries", "keys", "values", "copied_query", "copied_key", "copied_value"}


class Diagnosis:
    """A misconception id (or None), the reference's intermediate value where the student's
    computation departs (or None) and the student's frame there: (file, line, function) or None."""

    def __init__(self, cause=None, step=None, place=None):
        self.cause, self.step, self.place = cause, step, place

    def __bool__(self):
        return bool(self.cause or self.step)


def _probe_entry(key):
    try:
        from ch3_check_values import PROBES, expected_values
    except ImportError:
        return None, None
    return PROBES.get(key), expected_values().get(key) if key else None


def _tensor(value, torch):
    return torch.tensor(value, dtype=torch.float64)


def _equal(actual, expected, torch):
    """The same output, shape and values (NaN matches NaN), within the checks' tolerance."""
    if not isinstance(actual, torch.Tensor) or tuple(actual.shape) != tuple(expected.shape):
        return False
    return bool(torch.allclose(actual.detach().double(), expected, atol=1e-4, rtol=1e-3, equal_nan=True))


def known_mistake(entry, actual=None, error=None, torch=None):
    """The one misconception whose output (or error) on this probe is the student's, else None."""
    names = set()
    for name, outcome in entry.get("causes", []):
        if isinstance(outcome, dict):
            if error is not None and outcome.get("error") == error:
                names.add(name)
        elif actual is not None and _equal(actual, _tensor(outcome, torch), torch):
            names.add(name)
    return names.pop() if len(names) == 1 else None


def diagnose(key, m, library, own, seeded, cause=None, error=None):
    """The Diagnosis of a check that failed, from its probe `key` run on the student's code `m`
    (`error`: the "Type: message" line the check stopped with; `cause`: one the check named)."""
    fn, entry = _probe_entry(key)
    if fn is None or entry is None or library.__name__ != "torch":
        return Diagnosis(cause)
    if error is not None:
        return Diagnosis(cause or known_mistake(entry, error=error))
    from ch3_check_trace import departure, traced

    try:
        with seeded(library):
            output, trace = traced(lambda: fn(m, library), own)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the check itself says what went wrong
        return Diagnosis(cause)
    if not isinstance(output, library.Tensor) or _equal(output, _tensor(entry["expected"], library), library):
        return Diagnosis(cause)
    cause = cause or known_mistake(entry, actual=output, torch=library) or _init_mistake(entry, m, library, seeded)
    if cause == "wrong-init":  # the parameters differ: every step does
        return Diagnosis(cause)
    found = departure(trace, output, [(name, _tensor(value, library)) for name, value in entry["checkpoints"]])
    if found and found[0] in PROJECTIONS and entry.get("seeded"):  # seeded: the constructor's parameters
        return Diagnosis(cause)
    return Diagnosis(cause, *(found or (None, None)))


def _init_mistake(entry, m, library, seeded):
    """ "wrong-init" when a seeded probe fails while its twin, the same computation with known weights,
    gives the reference's output: then the parameters are not created as the book creates them."""
    fn, twin = _probe_entry(entry.get("twin"))
    if fn is None or twin is None:
        return None
    try:
        with seeded(library):
            output = fn(m, library)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the twin fails too: the computation is wrong, not the parameters
        return None
    return "wrong-init" if _equal(output, _tensor(twin["expected"], library), library) else None


def code_at(place):
    """The student's line of code at `place`, as it is in the file."""
    return linecache.getline(place[0], place[1]).strip()[:160] if place else ""


def explained(row, diagnosis, t, locate, frame_at):
    """A failing check's row with its diagnosis: the misconception and its hint, and where the
    student's computation departs from the reference, with the line of code there (`frame_at(place,
    code)` makes the frame that `locate` names)."""
    cause = diagnosis.cause
    row["cause_id"], row["place"] = cause, diagnosis.place  # for tools that read the results, never shown
    if cause and t.has("causes." + cause):
        hint = t("hints." + cause) if t.has("hints." + cause) else ""
        row["cause"] = t("cause", title=t("causes." + cause), hint=hint).strip()
    if diagnosis.step:
        step = t("checkpoints." + diagnosis.step) if t.has("checkpoints." + diagnosis.step) else diagnosis.step
        if diagnosis.place:
            frame = frame_at(diagnosis.place, code_at(diagnosis.place))
            row["departs"] = t("departs", step=step, where=locate(frame), function=frame.function)
            row["departs_code"] = frame.code
        else:
            row["departs"] = t("departs-unlocated", step=step)
        if not row.get("cause") and t.has("checkpoint-hints." + diagnosis.step):
            row["cause"] = t("checkpoint-hint", hint=t("checkpoint-hints." + diagnosis.step))
    return row
