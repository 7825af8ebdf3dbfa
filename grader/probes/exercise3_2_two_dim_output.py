"""Probes of exercise3_2_two_dim_output: a two-head wrapper with 2-dimensional output vectors."""

from __future__ import annotations

import torch

from grader.probes import attr, book_inputs, cpu_manual_seed, function, probe, randn, tensor

MODULE = "exercise3_2_two_dim_output"


@probe(MODULE)
def structure(ns):
    """build_two_dim_wrapper(d_in=3, context_length=6): its heads and the shape of its output."""
    build = function(ns, MODULE, "build_two_dim_wrapper")
    module = build(3, 6)
    heads = attr(module, "heads")
    try:
        heads = list(heads)
    except TypeError:
        heads = []
    shapes = [list(tensor(attr(head, "W_query.weight"), "heads[i].W_query.weight").shape) for head in heads]
    module.eval()
    with torch.no_grad():
        out = tensor(module(randn(3, 4, 3, seed=800)), "build_two_dim_wrapper(...)(x)")  # T=4 < 6
    return {"num_heads": len(heads), "query_weight_shapes": shapes, "output_shape": list(out.shape)}


@probe(MODULE)
def seeded_output(ns):
    """The exercise's run: torch.manual_seed(123), then the wrapper on the book's batch of two."""
    build = function(ns, MODULE, "build_two_dim_wrapper")
    cpu_manual_seed(123)
    module = build(3, 6)
    batch = torch.stack((book_inputs(), book_inputs()))
    with torch.no_grad():
        return {"out": tensor(module(batch), "build_two_dim_wrapper(...)(batch)")}


@probe(MODULE)
def seeded_own_classes(ns):
    """What the student's own MultiHeadAttentionWrapper (3.6, with its heads of 3.5) gives in the
    exercise's configuration (two heads of one dimension), run as `seeded_output` runs: where it
    differs from the reference's, Exercise 3.2 is judged against it (the earlier sections' mistakes
    are paid for there)."""
    cls = function(ns, "sec3_6_multi_head_attention", "MultiHeadAttentionWrapper")
    cpu_manual_seed(123)
    module = cls(3, 1, 6, 0.0, num_heads=2)
    batch = torch.stack((book_inputs(), book_inputs()))
    with torch.no_grad():
        return {"out": tensor(module(batch), "MultiHeadAttentionWrapper(3, 1, 6, 0.0, num_heads=2)(batch)")}
