"""Causal masks: the triangle the reference hides (the future: triu(1)), the wrong ones students
write, and what a hidden pattern says about the mistake behind it."""

from __future__ import annotations

from collections.abc import Callable

import torch


def triangle(t: int, upper: bool, diagonal: int, like: torch.Tensor | None = None) -> torch.Tensor:
    ones = torch.ones(t, t, dtype=torch.bool)
    return torch.triu(ones, diagonal) if upper else torch.tril(ones, diagonal)


# what each wrong mask hides, given the sequence length (the reference hides triu(1))
MASKS: dict[str, tuple[str | None, Callable[[int], torch.Tensor]]] = {
    "hides-nothing": ("mask-not-applied", lambda t: torch.zeros(t, t, dtype=torch.bool)),
    "hides-diagonal-too": ("mask-includes-diagonal", lambda t: triangle(t, True, 0)),
    "hides-two-diagonals": ("mask-includes-diagonal", lambda t: triangle(t, True, -1)),
    "hides-past": ("mask-inverted", lambda t: triangle(t, False, -1)),
    "hides-past-and-self": ("mask-inverted", lambda t: triangle(t, False, 0)),
    "shows-next": (None, lambda t: triangle(t, True, 2)),
}


def mask_misconception(hidden: torch.Tensor) -> str | None:
    """What hiding the (T, T) pattern `hidden` (True: not attended to) instead of the future says:
    nothing hidden, the token itself hidden too, or the past hidden instead of the future."""
    t = hidden.shape[-1]
    future = triangle(t, True, 1)
    past = triangle(t, False, -1)
    itself = torch.eye(t, dtype=torch.bool)
    if torch.equal(hidden, future):
        return ""
    if not bool(hidden.any()):
        return "mask-not-applied"
    if not tells_apart(hidden):
        return None
    if bool((hidden & future).sum() == future.sum()) and bool((hidden & itself).any()):
        return "mask-includes-diagonal"
    if bool((hidden & past).any()) and bool((hidden & future).sum() < future.sum()):
        return "mask-inverted"
    return None


def tells_apart(hidden: torch.Tensor) -> bool:
    """Whether the (T, T) pattern `hidden` says which mistake made it: one that hides every entry does
    not (tril(1), triu(-1) and a mask of ones all hide every entry of a sequence of two tokens)."""
    return hidden.shape[-1] < 2 or not bool(hidden.all())
