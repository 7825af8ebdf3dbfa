"""Probes of sec3_5_causal_attention."""
from __future__ import annotations

from grader.probes import probe

MODULE = "sec3_5_causal_attention"
