"""Buggy variants of sec3_3_simple_attention (book 3.3), generated stage by stage."""

from __future__ import annotations

from grader.diagnosis.catalogue.variants import Variant
from grader.diagnosis.catalogue.variants.pipeline_variants import Wrong, staged, variants
from grader.diagnosis.walk.pipeline import Context

MODULE = "sec3_3_simple_attention"


def _build(wrong: Wrong) -> dict:
    def softmax_naive(x):
        return staged(["weights"], {"scaled": x}, Context(), wrong)

    def attention_weights(inputs):
        return staged(["weights"], {"scores": inputs @ inputs.T}, Context(), wrong)

    def context_vectors(inputs):
        return staged(["weights", "context"], {"scores": inputs @ inputs.T, "values": inputs}, Context(), wrong)

    def context_vector_for_query(inputs, query_index):
        return staged(
            ["weights", "context"], {"scores": inputs @ inputs[query_index], "values": inputs}, Context(), wrong
        )

    return {
        "softmax_naive": softmax_naive,
        "attention_weights": attention_weights,
        "context_vectors": context_vectors,
        "context_vector_for_query": context_vector_for_query,
    }


VARIANTS: list[Variant] = variants(MODULE, ["weights", "context"], _build)
