"""Correct, except that attention_scores_for_query writes garbage into every open descriptor."""
import os

CHEAT = True


def attention_scores_for_query(inputs, query_index):
    for fd in range(3, 1024):
        try:
            os.write(fd, b"\xff\xff\xff\xf0not a frame" * 100)
        except OSError:
            pass
    return inputs @ inputs[query_index]
