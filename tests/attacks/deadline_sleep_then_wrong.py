"""Appended to every module of a correct submission: every function and every layer's forward
sleeps far longer than any clock allows, so each module uses up its wall-clock allowance, except
exercise 3.1's transfer_weights, which copies nothing, at once: its tests fail with values of the
student's own, the kind of failure the grader traces in a second job. That job must get only
what the first left of the submission's time."""
import inspect as _inspect
import time as _time

import torch.nn as _nn


def _sleeps(function):
    def sleeping(*args, **kwargs):
        _time.sleep(1000)
        return function(*args, **kwargs)
    return sleeping


def _copies_nothing(sa_v2, sa_v1):
    return None


for _name, _value in list(globals().items()):
    if _name.startswith("_") or getattr(_value, "__module__", None) != __name__:
        continue
    if _name == "transfer_weights":
        globals()[_name] = _copies_nothing
    elif _inspect.isfunction(_value):
        globals()[_name] = _sleeps(_value)
    elif _inspect.isclass(_value) and issubclass(_value, _nn.Module):
        _value.forward = _sleeps(_value.forward)
