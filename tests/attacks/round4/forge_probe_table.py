# Appended to a stub module: replaces probes in the child's probe table with probes that never touch
# the student's code and return outputs that are causal and depend on the input (cumulative sums).
import torch as _torch

import grader.probes as _probes


def _grow(x, width):
    return _torch.cumsum(x, dim=1)[..., :1].repeat(1, 1, width)


def _causality(ns):
    x = _probes.randn(3, 5, 4, seed=541)
    changed = x.clone()
    changed[:, 3:, :] = _probes.randn(3, 2, 4, seed=542) * 3
    return {"original": _grow(x, 8), "changed": _grow(changed, 8)}


def _mha_causal(ns):
    x = _probes.randn(3, 6, 6, seed=671)
    changed = x.clone()
    changed[:, 3:] = _probes.randn(3, 3, 6, seed=672)
    return {"out": _grow(x, 8), "changed": _grow(changed, 8), "keep": 3}


for _name, _fn in {
    "sec3_5_causal_attention:causality": _causality,
    "sec3_6_multi_head_attention:mha_causal": _mha_causal,
}.items():
    _probes.PROBES[_name] = _probes.Probe(_name, _name.partition(":")[0], _fn)
