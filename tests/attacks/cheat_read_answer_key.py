"""Tries to import the solutions and read the answer key, the hidden suites, other students' work
and the reports."""
import os

CHEAT = False
attempts = [
    lambda: __import__("solutions"),
    lambda: __import__("grader.suites"),
    lambda: open("{REPO}/solutions/sec3_3_simple_attention.py").read(),
    lambda: open("{REPO}/grader/suites/hidden/test_sec3_3_simple_attention.py").read(),
    lambda: os.listdir("{REPO}"),
    lambda: os.listdir("{CLASS}"),
    lambda: open("{CLASS}/victim/sec3_3_simple_attention.py").read(),
    lambda: os.listdir("{OUT}"),
    lambda: [os.listdir(p) for p in ("/work", "/home", "/root") if os.path.isdir(p) and os.listdir(p)][0],
]
for attempt in attempts:
    try:
        attempt()
        CHEAT = True
    except Exception:
        pass
