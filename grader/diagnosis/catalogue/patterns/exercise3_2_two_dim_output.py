"""Error patterns of exercise3_2_two_dim_output."""

from __future__ import annotations

from grader.diagnosis.catalogue.patterns import Pattern

PATTERNS: list[Pattern] = []
