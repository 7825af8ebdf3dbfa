"""What a submission's text costs the trusted process, at the caps: the worst inputs known for each
step that reads a student's text before or after the sandbox.

    python benchmarks/trusted_text.py [--repeat 3]

Prints the least CPU time of --repeat runs for: reading a 512 KB module in each encoding it may
declare (SOURCE_ENCODINGS, and punycode, which is never used: read as UTF-8); parsing the worst
text known at MAX_PARSED_CHARS (one f-string of replacement fields: quadratic in CPython 3.11) and
at the module cap, which the trusted process no longer parses; the track's reading of a 512 KB
module that does not parse (blank lines); a notebook of 8 MB; quoting a line of a 512 KB module;
and, for issue 36 point 6, a whole submission read as the grader reads it (notebook, then the
near-miss search) for a notebook of 160,000 distinct definitions named like the contract's (the
near-miss search's worst case: each costs a full edit-distance table against every required name),
one of 20,000 one-line assignments in one cell (a module's top-level names found by pattern), one
of 30,000 tiny cells (the most a notebook's JSON may hold), and 2 MB of code past the reading
budget. Not part of the test run (tests/test_trusted_text_costs.py and
tests/test_trusted_text_caps.py compare costs or count what was compared, never time).
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
from grader.intake.submission import MAX_SOURCE_BYTES, submission_from_files


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


def chapter(cells: list[str]) -> bytes:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": c} for c in cells]}).encode()


def many_definitions(count: int = 160_000, per_cell: int = 80) -> bytes:
    unit = "def SelfAttention{:06d}(x): pass\n"
    return chapter(["".join(unit.format(i) for i in range(c, c + per_cell)) for c in range(0, count, per_cell)])


def many_assignments() -> bytes:
    head = "import torch\nclass CausalAttention(torch.nn.Module):\n    pass\n"
    return chapter([head + "".join(f"SelfAttention_v{i}=1\n" for i in range(20_000))])


def tiny_cells() -> bytes:
    return chapter([f"def f{i}(): pass\n" for i in range(30_000)])


def past_the_budget() -> bytes:
    return chapter(["x = 1  # " + "y" * 65_000 + "\n"] * 32)


def whole_read(data: bytes) -> None:
    submission_from_files("student", Path("student"), {"ch3.ipynb": data})


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
    for name, build in [
        ("160,000 distinct definitions", many_definitions),
        ("20,000 top-level assignments in one cell", many_assignments),
        ("30,000 one-line cells", tiny_cells),
        ("2 MB of code, past the reading budget", past_the_budget),
    ]:
        data = build()
        rows.append((f"a submission of a notebook of {name} ({len(data) // 1024} KB)", cpu(whole_read, data, repeat)))
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
