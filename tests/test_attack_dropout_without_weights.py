"""Round-four attack: `test_dropout_in_train_mode` (3.5) passes for a CausalAttention that computes
no attention weights at all, so its dropout cannot be "on the attention weights" (issue: "dropout
drops from weights that are not uniform"). Two forwards:

- a uniform cumulative mean of the projections (causal, input-dependent) with dropout applied to
  whole output rows: row 1 is either zero or doubled, exactly what the row-1 check looks for;
- a non-causal mean over the sequence with dropout on the outputs: the row check is skipped for a
  non-causal module, and the remaining checks only asked that train-mode outputs vary.

Both make every number zero or twice its eval value; dropout on the weights of a token that attends to
several makes a mix that is neither, causal or not (checked now for every module).
"""

from __future__ import annotations

import pytest

from tests.test_degenerate_forwards import S5, failed_with, judged

CUMULATIVE_MEAN_ROW_DROPOUT = """
import torch as _t
def _forward(self, x):
    v = self.W_value(x) + self.W_query(x) + self.W_key(x)
    t = _t.arange(1, x.shape[1] + 1, dtype=v.dtype).view(1, -1, 1)
    keep = self.dropout(_t.ones(x.shape[0], x.shape[1], 1, dtype=v.dtype))
    return v.cumsum(dim=1) / t * keep
CausalAttention.forward = _forward
"""

MEAN_OUTPUT_DROPOUT = """
def _forward(self, x):
    v = self.W_value(x) + self.W_query(x) + self.W_key(x)
    return self.dropout(v.mean(dim=1, keepdim=True).expand_as(v))
CausalAttention.forward = _forward
"""


@pytest.mark.parametrize("body", [CUMULATIVE_MEAN_ROW_DROPOUT, MEAN_OUTPUT_DROPOUT], ids=["cummean-rows", "mean-out"])
def test_dropout_without_attention_weights_earns_no_dropout_point(body):
    failed_with(judged(S5, body), ["test_dropout_in_train_mode"], "check.dropout-not-on-outputs")
