"""Probes of sec3_6_multi_head_attention."""
from __future__ import annotations

from grader.probes import probe

MODULE = "sec3_6_multi_head_attention"
