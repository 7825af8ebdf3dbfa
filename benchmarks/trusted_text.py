"""What a submission's text costs the trusted process, at the caps: the worst inputs known for each
step that reads a student's text before or after the sandbox.

    python benchmarks/trusted_text.py [--repeat 3]

Prints the least CPU time of --repeat runs for: reading a 512 KB module in each encoding it may
declare (SOURCE_ENCODINGS, and punycode, which is never used: read as UTF-8); parsing the worst
text known at MAX_PARSED_CHARS (one f-string of replacement fields: quadratic in CPython 3.11)
and at the module cap, which the trusted process no longer parses; the track's reading of a
512 KB module that does not parse (blank lines); a notebook of 8 MB; quoting a line of a 512 KB
module. Not part of the test run (tests/test_attacks_round3_text.py compares costs, never times).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.diagnosis.source.quotes import code_at
from grader.frameworks import track_of
from grader.intake.notebooks import MAX_NOTEBOOK_BYTES, notebook_modules
from grader.intake.parsing import MAX_PARSED_CHARS, parsed
from grader.intake.source_text import SOURCE_ENCODINGS, read_source
from grader.intake.submission import MAX_SOURCE_BYTES


def cpu(function, argument, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function(argument)
        best = min(best, time.process_time() - start)
    return best


def fstring(size: int) -> str:
    return 'x = f"' + "{a}" * ((size - 8) // 3) + '"\n'


def module(encoding: str) -> bytes:
    head = f"# -*- coding: {encoding} -*-\n# ".encode()
    unit = "注意力 é ".encode(encoding if encoding in SOURCE_ENCODINGS else "utf-8", errors="replace")
    return head + unit * ((MAX_SOURCE_BYTES - len(head)) // len(unit))


def notebook() -> bytes:
    line = "%time x = 1  # a note\n"
    cell = line * (MAX_NOTEBOOK_BYTES // len(line) // 40)
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": cell} for _ in range(32)]}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    rows = []
    for encoding in sorted(SOURCE_ENCODINGS) + ["punycode"]:
        rows.append((f"read a 512 KB module declared {encoding}", cpu(read_source, module(encoding), repeat)))
    rows.append(
        (
            f"ast.parse an f-string of {MAX_PARSED_CHARS // 1024} KB (the cap)",
            cpu(ast.parse, fstring(MAX_PARSED_CHARS), repeat),
        )
    )
    rows.append(
        ("parsed() an f-string of 512 KB (over the cap: not parsed)", cpu(parsed, fstring(MAX_SOURCE_BYTES), repeat))
    )
    blank = "import mindspore\n" + "\n" * MAX_SOURCE_BYTES + "("
    rows.append(("track of a 512 KB module of blank lines that does not parse", cpu(track_of, {"m": blank}, repeat)))
    data = notebook()
    rows.append(
        (
            f"read a notebook of {len(data) // 1024} KB",
            cpu(lambda raw: notebook_modules(raw, "ch3.ipynb"), data, repeat),
        )
    )
    text = "\n" * (MAX_SOURCE_BYTES - 10) + "x = 1\n"
    rows.append(
        ("quote the last line of a 512 KB module", cpu(lambda t: code_at("m.py", t.count("\n"), {"m": t}), text, 1))
    )
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
