"""Probes of exercise3_1_weight_transfer."""
from __future__ import annotations

from grader.probes import probe

MODULE = "exercise3_1_weight_transfer"
