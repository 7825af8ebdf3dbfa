"""Probes of exercise3_2_two_dim_output."""
from __future__ import annotations

from grader.probes import probe

MODULE = "exercise3_2_two_dim_output"
