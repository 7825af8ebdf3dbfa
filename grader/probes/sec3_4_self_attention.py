"""Probes of sec3_4_self_attention."""
from __future__ import annotations

from grader.probes import probe

MODULE = "sec3_4_self_attention"
