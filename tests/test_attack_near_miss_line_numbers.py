"""Round-four attack on trusted CPU (issue 36, point 6: "every trusted step that reads student text
must have a cost bounded by a cap that does not grow with what the student wrote"). When a module
does not parse, the near-miss search finds its top-level names by pattern and numbers each one's
line by counting the newlines from the start of the text (`source.count("\\n", 0, m.start())`):
quadratic in the module's length. A 512 KB module of ``a=1`` lines ending in ``(`` costs the
grader's own process about 10 s of CPU, seven such modules about 70 s (measured; the issue's
notebook of 160,000 definitions now costs 0.3 s). The cost ratio is measured as
tests/test_trusted_text_costs.py does (CPU time, 8 times the text)."""

from __future__ import annotations

from grader.intake.near_misses import search
from tests.test_trusted_text_costs import FACTOR, LINEAR, cost_ratio

M35 = "sec3_5_causal_attention"


def module(size: int) -> dict[str, str]:
    return {M35: "a=1\n" * (size // 4) + "(\n"}  # does not parse: names read by pattern


def test_the_near_miss_search_of_a_module_that_does_not_parse_costs_linear_time():
    assert cost_ratio(lambda sources: search(sources, {}), module(32 * 1024), module(32 * 1024 * FACTOR)) < LINEAR
