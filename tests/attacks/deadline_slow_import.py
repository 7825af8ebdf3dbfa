"""Appended to a correct sec3_5_causal_attention.py: importing it takes 3 s (code at the top
level that sleeps), and its three functions sleep far longer than any clock allows. Its class,
CausalAttention, is correct: sec3_6 imports it, and sec3_6's and the exercises' code is correct.
Two probes of sec3_5 use up its allowance, the second while importing it again in a new child;
the module is not known to hang on import for that, so the modules that import it must get it."""
import time as _time

_time.sleep(3)


def _sleeps(function):
    def sleeping(*args, **kwargs):
        _time.sleep(1000)
        return function(*args, **kwargs)
    return sleeping


for _name in ("simple_causal_mask", "mask_and_renormalize", "masked_attention_weights"):
    globals()[_name] = _sleeps(globals()[_name])
