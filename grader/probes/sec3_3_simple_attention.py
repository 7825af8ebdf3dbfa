"""Probes of sec3_3_simple_attention: attention without trainable weights (book 3.3.1-3.3.2)."""

from __future__ import annotations

from grader.probes import book_inputs, function, probe, randn, tensor

MODULE = "sec3_3_simple_attention"


@probe(MODULE)
def scores_for_query(ns):
    fn = function(ns, MODULE, "attention_scores_for_query")
    return {
        "book_q2": tensor(fn(book_inputs(), 1), "attention_scores_for_query"),  # (6,)
        "random_q3": tensor(fn(randn(5, 4, seed=31), 3), "attention_scores_for_query"),  # (5,)
    }


@probe(MODULE)
def softmax_naive(ns):
    fn = function(ns, MODULE, "softmax_naive")
    return {
        "vector": tensor(fn(randn(6, seed=32)), "softmax_naive"),  # (6,)
        "matrix": tensor(fn(randn(3, 5, seed=33)), "softmax_naive"),  # (3, 5): each row sums to 1
    }


@probe(MODULE)
def context_vector_for_query(ns):
    fn = function(ns, MODULE, "context_vector_for_query")
    return {
        "book_q2": tensor(fn(book_inputs(), 1), "context_vector_for_query"),  # (3,)
        "random_q0": tensor(fn(randn(5, 4, seed=34), 0), "context_vector_for_query"),  # (4,)
    }


@probe(MODULE)
def attention_scores(ns):
    fn = function(ns, MODULE, "attention_scores")
    return {
        "book": tensor(fn(book_inputs()), "attention_scores"),  # (6, 6)
        "random": tensor(fn(randn(5, 4, seed=35)), "attention_scores"),  # (5, 5)
    }


@probe(MODULE)
def attention_weights(ns):
    fn = function(ns, MODULE, "attention_weights")
    return {
        "book": tensor(fn(book_inputs()), "attention_weights"),  # (6, 6)
        "random": tensor(fn(randn(5, 4, seed=36)), "attention_weights"),  # (5, 5)
        "other": tensor(fn(randn(5, 4, seed=38)), "attention_weights"),  # other inputs: other weights
    }


@probe(MODULE)
def context_vectors(ns):
    fn = function(ns, MODULE, "context_vectors")
    return {
        "book": tensor(fn(book_inputs()), "context_vectors"),  # (6, 3)
        "random": tensor(fn(randn(5, 4, seed=37)), "context_vectors"),  # (5, 4)
    }
