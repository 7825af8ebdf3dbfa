"""Buggy variants of sec3_3_simple_attention (book 3.3)."""
from __future__ import annotations

import torch

from grader.diagnosis.variants import Variant

MODULE = "sec3_3_simple_attention"

def _softmax_naive_dim0(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0, keepdim=True)


def _attention_weights_dim0(inputs):
    return torch.softmax(inputs @ inputs.T, dim=0)


def _context_vectors_dim0(inputs):
    return _attention_weights_dim0(inputs) @ inputs


def _context_vector_for_query_scores(inputs, query_index):
    return (inputs @ inputs[query_index]) @ inputs


def _context_vectors_scores(inputs):
    return (inputs @ inputs.T) @ inputs


VARIANTS: list[Variant] = [
    Variant("softmax-wrong-dim", {MODULE: {
        "softmax_naive": _softmax_naive_dim0,
        "attention_weights": _attention_weights_dim0,
        "context_vectors": _context_vectors_dim0,
    }}),
    Variant("uses-scores-not-weights", {MODULE: {
        "context_vector_for_query": _context_vector_for_query_scores,
        "context_vectors": _context_vectors_scores,
    }}),
]
