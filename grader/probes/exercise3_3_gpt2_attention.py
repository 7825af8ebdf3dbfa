"""Probes of exercise3_3_gpt2_attention."""
from __future__ import annotations

from grader.probes import probe

MODULE = "exercise3_3_gpt2_attention"
