"""Not an attack: appended to a correct module, it imports standard-library modules the reference
never uses (some of them preloaded by the warm worker, some not: those must be found where the
interpreter lives, which may be a private folder such as /root/.pyenv) and calls each of them on
the way to the correct answers. A correct submission earns full marks whatever it imports."""
import collections
import colorsys
import ctypes.util
import dataclasses
import decimal
import difflib
import fractions
import functools
import graphlib
import itertools
import math
import statistics
import typing

import torch.nn.functional as _F


@dataclasses.dataclass(frozen=True)
class _Scale:
    factor: fractions.Fraction


def _one() -> float:
    checks = [
        statistics.mean([1, 2, 3]) == 2,
        decimal.Decimal("0.5") * 2 == 1,
        _Scale(fractions.Fraction(2, 2)).factor == 1,
        functools.reduce(lambda a, b: a * b, itertools.repeat(1, 3)) == 1,
        collections.Counter("aab")["a"] == 2,
        math.isclose(math.fsum([0.5, 0.5]), 1.0),
        colorsys.rgb_to_hsv(0, 0, 0)[2] == 0,
        difflib.SequenceMatcher(None, "ab", "ab").ratio() == 1.0,
        list(graphlib.TopologicalSorter({"b": {"a"}}).static_order()) == ["a", "b"],
        ctypes.util.find_library("c") is None or "c" in ctypes.util.find_library("c"),
        typing.get_origin(typing.List[int]) is list,
    ]
    return 1.0 if all(checks) else float("nan")


_plain_attention_scores = attention_scores


def attention_scores(inputs):
    return _plain_attention_scores(inputs) * _one()


def attention_weights(inputs):  # scaled_dot_product_attention's weights, without the scaling
    scores = attention_scores(inputs)
    return _F.softmax(scores, dim=-1)
