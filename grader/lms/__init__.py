"""The LMSs whose bulk downloads the kit grades and whose grade imports it writes: one module each,
registered here (the recipe: docs/extending.md, "Adding an LMS format").

Standard library only (the intake, which the student bundle ships, reads downloads through it).
"""

from __future__ import annotations

from grader.lms.base import LmsFormat, Named, Peek, Reading, Sheet, Student
from grader.lms.blackboard import Blackboard
from grader.lms.brightspace import Brightspace
from grader.lms.canvas import Canvas
from grader.lms.moodle import Moodle

FORMATS: dict[str, LmsFormat] = {f.name: f for f in (Canvas(), Moodle(), Blackboard(), Brightspace())}
NAMES = tuple(FORMATS)

__all__ = ["FORMATS", "NAMES", "LmsFormat", "Named", "Peek", "Reading", "Sheet", "Student"]
