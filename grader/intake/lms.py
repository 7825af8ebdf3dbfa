"""Bulk downloads of an LMS, recognised by their names and grouped into one submission per student.

Each LMS's names are read by its own module of `grader.lms` (Canvas, Moodle, Blackboard Learn,
Brightspace: which names, whose each is, what the report says about re-uploads and lateness). Every
name is read from the left (issue 36): the LMS's part is the first match, and what follows it is
the student's own file name, however much it looks like an LMS's. When two LMSs read a download,
the one that accounts for more of its names is believed (Blackboard's attempt .txt files are
Blackboard's, not a Canvas student's), then the one whose part is the shorter in every name (the
other took part of a student's file name for its own: a Canvas upload named
``x_17_assignsubmission_file_ch3.ipynb``); when none stands out, the names are no bulk download.

Each student is named as the LMS's module names them and keeps the LMS's identity
(`grader.records.LmsIdentity`) for `grade export`. Standard library only (the student bundle ships
a copy of intake/).
"""

from __future__ import annotations

from grader.intake.files import Entry
from grader.lms import FORMATS, Peek, Reading, Student
from grader.lms.base import CODE_SUFFIXES, JUNK

__all__ = ["CODE_SUFFIXES", "JUNK", "Student", "bulk_download"]


def _visible(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.name not in JUNK and not e.name.startswith(".")]


def bulk_download(entries: list[Entry], peek: Peek | None = None) -> list[Student] | None:
    """The students of a folder's (or zip's) top level when it is an LMS's bulk download; None when
    it is not one (every file or folder that could hold code must have the LMS's name). `peek`
    reads a small file of that level (what an LMS writes beside the students' files)."""
    visible = _visible(entries)
    readings = {name: found for name, lms in FORMATS.items() if (found := lms.read(visible, peek)) is not None}
    if len(readings) > 1:
        believed = _believed(readings)
        readings = {believed: readings[believed]} if believed else {}
    return next(iter(readings.values())).students if readings else None


def _believed(readings: dict[str, Reading]) -> str:
    """Of several LMSs that read a download, the one to believe: of those whose names keep the LMS's
    own rules (`Reading.doubtful`), the one that accounts for the most of its names (its own files
    beside the students', e.g. Blackboard's attempt .txt, count), then the one whose part of every
    name they share is the shorter; "" when none stands out."""
    if not all(reading.doubtful for reading in readings.values()):
        readings = {lms: reading for lms, reading in readings.items() if not reading.doubtful}
    claims = {lms: set(reading.prefixes) for lms, reading in readings.items()}
    widest = [lms for lms in readings if not any(claims[lms] < claims[other] for other in readings)]
    if len(widest) == 1:
        return widest[0]
    shared = set.intersection(*(claims[lms] for lms in widest))
    for lms in widest:
        mine = readings[lms].prefixes
        if all(mine[name] < readings[other].prefixes[name] for other in widest if other != lms for name in shared):
            return lms
    return ""
