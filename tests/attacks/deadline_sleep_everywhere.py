"""Appended to a correct module: every function of it sleeps far longer than any clock allows.
Sleeping costs no CPU time, so only wall clocks stop it; the other modules of the same
submission are correct and must be graded as usual."""
import time as _time


def _sleeps(function):
    def sleeping(*args, **kwargs):
        _time.sleep(1000)
        return function(*args, **kwargs)
    return sleeping


for _name in ("attention_scores_for_query", "softmax_naive", "context_vector_for_query", "attention_scores",
              "attention_weights", "context_vectors"):
    globals()[_name] = _sleeps(globals()[_name])
