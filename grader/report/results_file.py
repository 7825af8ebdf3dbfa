"""results.json, the machine-readable report of one submission (docs/results-format.md): the one
module that writes it and reads it back (a re-run reuses an unchanged submission's result; `grade
export` reads a class's grades). Reading never trusts the file: no link is followed, its size is
capped, and a document with a missing or impossible value is no result at all."""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grader.fingerprint import version
from grader.i18n import Catalog
from grader.intake.printable import printable
from grader.lms import FORMATS
from grader.records import (
    MODULES,
    SECTIONS,
    GradeResult,
    Intake,
    IntegrityNote,
    LmsIdentity,
    ModuleFound,
    NearMiss,
    SectionScore,
    TestOutcome,
)
from grader.report.diagnosis import diagnosis_record
from grader.report.messages import error_output

NAME = "results.json"
DISTRIBUTION = "attention-kit"  # the package that writes the report: its version goes in
MAX_BYTES = 32 * 1024**2


def results_document(result: GradeResult, catalog: Catalog) -> dict:
    """results.json: `message` is the grader's sentence (the student's text in it quoted as code
    spans); `output` is the student's own text that came with an error, shown apart."""
    return {
        "submission": result.submission,
        "folder": result.folder,
        "track": result.track,
        "score": result.score,
        "max_score": result.max_score,
        "sections": [asdict(section) for section in result.sections],
        "tests": [
            {
                "id": o.id,
                "section": o.section,
                "points": o.points,
                "max_points": o.max_points,
                "status": o.status,
                "message": str(o.message),
                "output": error_output(o.error),
                "misconception": o.misconception,
                "blocked_by": o.blocked_by,
                "diagnosis": diagnosis_record(o),
            }
            for o in result.tests
        ],
        "integrity": [asdict(note) for note in result.integrity],
        "found": [asdict(found) for found in result.intake.modules],
        "notebooks": list(result.intake.notebooks),
        "near_misses": [asdict(miss) for miss in result.intake.near_misses],
        "remarks": [asdict(note) for note in result.intake.remarks],
        "lms": asdict(result.intake.identity) if result.intake.identity is not None else None,
        "content_hash": result.content_hash,
        "lang": catalog.lang,
        "kit_version": version(DISTRIBUTION) or None,
    }


def results_json(result: GradeResult, catalog: Catalog) -> str:
    return json.dumps(_strict(results_document(result, catalog)), indent=2, ensure_ascii=False)


def _strict(value: Any) -> Any:
    """A JSON document with every string encodable as UTF-8 and no NaN or infinity (strict JSON)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return str(value)
        except UnicodeEncodeError:
            return printable(value, keep="\n\t")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_strict(str(k)): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def read_results(folder: Path) -> GradeResult | None:
    """The result that FOLDER's results.json records (scores, sections, tests' statuses and
    messages, integrity notes; not the diagnoses), or None when there is no usable one.
    `submission` is "" when the document names none."""
    document = _read_document(folder / NAME)
    try:
        return _result(document) if isinstance(document, dict) else None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _read_document(path: Path) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return json.loads(handle.read(MAX_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def _result(document: dict) -> GradeResult:
    sections = [
        SectionScore(s["id"], str(s.get("title", s["id"])), _points(s["score"]), _points(s["max_score"]))
        for s in document.get("sections") or []
        if isinstance(s, dict) and s.get("id") in SECTIONS
    ]
    tests = [
        TestOutcome(
            id=t["id"],
            module=t["id"].split("::")[0],
            name=t["id"].split("::")[-1],
            section=t["section"],
            status=t["status"],
            points=_points(t["points"]),
            max_points=_points(t["max_points"]),
            message=str(t.get("message", "")),
            misconception=t.get("misconception"),
            blocked_by=t.get("blocked_by"),
        )
        for t in document.get("tests") or []
    ]
    name, folder = document.get("submission"), document.get("folder")
    return GradeResult(
        name if isinstance(name, str) else "",
        str(document.get("content_hash", "")),
        _points(document["score"]),
        _points(document["max_score"]),
        sections,
        tests,
        [IntegrityNote(str(n["kind"]), str(n["detail"])) for n in document.get("integrity") or []],
        track=str(document.get("track", "pytorch")),
        folder=folder if isinstance(folder, str) else None,
        intake=_intake(document),
    )


def _intake(document: dict) -> Intake:
    """How the code was found, as far as the document says it (a field that is not as written is
    left out: it decides no grade)."""
    found = tuple(
        ModuleFound(
            f["module"],
            str(f["file"]),
            str(f["how"]),
            tuple(n for n in f.get("cells") or () if isinstance(n, int)),
            tuple(str(n) for n in f.get("names") or ()),
        )
        for f in _dicts(document.get("found"))
        if f.get("module") in MODULES and "file" in f and "how" in f
    )
    misses = tuple(_near_miss(m) for m in _dicts(document.get("near_misses")))
    remarks = tuple(
        IntegrityNote(str(n["kind"]), str(n["detail"]))
        for n in _dicts(document.get("remarks"))
        if "kind" in n and "detail" in n
    )
    lms = document.get("lms")
    identity = None
    if isinstance(lms, dict) and lms.get("lms") in FORMATS:
        identity = LmsIdentity(
            str(lms["lms"]), str(lms.get("user_id", "")), str(lms.get("name", "")), lms.get("late") is True
        )
    notebooks = tuple(str(n) for n in document.get("notebooks") or () if isinstance(n, str))
    return Intake(found, tuple(m for m in misses if m is not None), remarks, identity, notebooks)


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _near_miss(record: dict) -> NearMiss | None:
    try:
        return NearMiss(
            str(record["module"]),
            str(record["kind"]),
            str(record["wanted"]),
            str(record["found"]),
            str(record["file"]),
            int(record["line"]),
            int(record.get("cell") or 0),
            str(record.get("owner", "")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _points(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"not a number of points: {value!r}")
    return float(value)
