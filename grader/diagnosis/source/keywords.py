"""A constructor that refuses an argument of the exercise's contract (`CausalAttention(...,
qkv_bias=True)` raising "__init__() got an unexpected keyword argument 'qkv_bias'"): the exception
is raised where the probe calls the class, before any line of the student's runs, so its traceback
has no line of theirs. The line is the class's `def __init__`, read from the submission's source; for a
keyword the contract does not name for that class (`n_heads=`), the line of the call that gives it.

Whether the class takes the same setting under another name (`bias=`, `use_bias=`) is read from that
signature too: then the argument is not ignored, it is named otherwise than the contract asks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from grader.diagnosis.source.init_methods import constructor_of, reference_constructor
from grader.diagnosis.source.quotes import frame
from grader.intake.parsing import parsed_once
from grader.records import StudentFrame, TestOutcome

REFUSED = re.compile(r"\b(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'")
# Any other call the constructor's signature refuses: too many or too few arguments, one given twice.
SIGNATURE = re.compile(
    r"\b(\w+)\.__init__\(\) (?:takes \d+ positional arguments? but \d+ (?:were|was) given"
    r"|missing \d+ required (?:positional|keyword-only) arguments?|got multiple values for argument)"
)


def refused_keyword(outcome: TestOutcome) -> tuple[str, str] | None:
    """(class, keyword) when the test's error is a constructor refusing a keyword argument."""
    error = outcome.error
    if error is None or error.kind != "exception" or error.exc_type != "TypeError":
        return None
    match = REFUSED.search(str(error.message))
    return (match.group(1), match.group(2)) if match else None


def refusing_class(outcome: TestOutcome) -> str | None:
    """The class whose constructor's signature refused the call of the test's error, if it did."""
    refused = refused_keyword(outcome)
    if refused is not None:
        return refused[0]
    error = outcome.error
    if error is None or error.kind != "exception" or error.exc_type != "TypeError":
        return None
    match = SIGNATURE.search(str(error.message))
    return match.group(1) if match else None


def constructor(outcome: TestOutcome, sources: Mapping[str, str]) -> tuple[StudentFrame, list[str]] | None:
    """The `def __init__` line of the class whose signature refused the call (a keyword, or the
    number of arguments), in the test's module, else in any module of the submission, and the
    names of its parameters."""
    refused = refusing_class(outcome)
    if refused is None:
        return None
    modules = [outcome.module] + [m for m in sources if m != outcome.module]
    for module in modules:
        init = constructor_of(parsed_once(sources.get(module, "")), refused)
        if init is not None:
            names = [a.arg for a in init.args.args + init.args.kwonlyargs]
            return frame(f"{module}.py", init.lineno, "__init__", sources), names
    return None


def contract_keywords(cls: str) -> frozenset[str] | None:
    """The parameters of the reference's constructor of `cls` (the exercise's contract), if the
    reference has that class."""
    init = reference_constructor(cls)
    return frozenset(a.arg for a in init.args.args + init.args.kwonlyargs) if init is not None else None


def caller_misnamed(outcome: TestOutcome) -> bool:
    """The refused keyword is none of the contract's for that class (`n_heads=` for `num_heads=`):
    the mistake is the call's, not the class's."""
    refused = refused_keyword(outcome)
    known = contract_keywords(refused[0]) if refused is not None else None
    return refused is not None and known is not None and refused[1] not in known


def named_otherwise(outcome: TestOutcome, sources: Mapping[str, str]) -> bool:
    """The refused keyword's setting is a parameter of the constructor under another name: one that
    shares the keyword's last word (`bias` for `qkv_bias`)."""
    refused = refused_keyword(outcome)
    found = constructor(outcome, sources)
    if refused is None or found is None:
        return False
    word = refused[1].rsplit("_", 1)[-1]
    return any(word in name.lower() for name in found[1] if name != "self")
