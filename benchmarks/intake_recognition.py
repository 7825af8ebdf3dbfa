"""What reading a submission costs the trusted process, in the shapes issue 24 added: a student's
chapter notebook without `# module:` lines (each module recognised by its names), the same code as
.py files and as a marked notebook, a hostile notebook at the analysis budget (tens of thousands
of statements binding one name), and LMS downloads read from a zip (a class, and a zip of many
tiny members).

    python benchmarks/intake_recognition.py [--repeat 3]

Prints the least CPU time of --repeat runs of each (a run reads each submission twice: once to
plan, once to grade). Not part of the test run.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.intake.discovery import discover, read_candidate, read_submission
from tests.conftest import solutions_as_submission
from tests.lms_downloads import Hand, canvas_download, student_files, write_zip
from tests.student_notebooks import MODULES, chapter_notebook, code, module_sources, notebook, write_notebook


def cpu(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def marked(sources: dict[str, str]) -> dict:
    cells = [code("import torch\nimport torch.nn as nn")]
    for module in MODULES:
        body = "\n".join(line for line in sources[module].splitlines() if not line.startswith("from sec3"))
        cells.append(code(f"# module: {module}\n{body}"))
    return notebook(cells)


def hostile() -> dict:
    """Statements that all bind and read one name, each cell at the analysis budget's scale, and a
    definition that needs the last of them: the closure takes them all."""
    chain = "\n".join(f"x = x + {i}" for i in range(2500))  # a cell within the analysis budget (32 kB)
    cells = [code("x = 0")] + [code(chain) for _ in range(20)]
    cells.append(code("def softmax_naive(t):\n    return t * x"))
    return notebook(cells)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        py = solutions_as_submission(base / "py")
        sources = module_sources(py)
        write_notebook(base / "recognised", chapter_notebook(sources, "demos"))
        write_notebook(base / "redefined", chapter_notebook(sources, "redefined"))
        write_notebook(base / "marked", notebook(marked(sources)["cells"]))
        write_notebook(base / "hostile", hostile())
        klass = ROOT / "examples" / "class"
        hands = {s.name: Hand(student_files(s)) for s in sorted(klass.iterdir()) if s.is_dir()}
        users = {name: (f"{name}smith", 100 + i) for i, name in enumerate(hands)}
        canvas = write_zip(base / "canvas.zip", canvas_download(hands, users))
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for i in range(100_000):
                archive.writestr(f"s{i % 50}/f{i}.txt", b"")
        many = base / "many.zip"
        many.write_bytes(buffer.getvalue())

        def klass_of(path: Path):
            return lambda: [read_candidate(c) for c in discover(path).candidates]

        rows = [
            (".py files (the reference)", lambda: read_submission(py)),
            ("chapter notebook, recognised (demo cells)", lambda: read_submission(base / "recognised")),
            ("chapter notebook, recognised (redefinitions)", lambda: read_submission(base / "redefined")),
            ("chapter notebook, # module: cells", lambda: read_submission(base / "marked")),
            ("hostile notebook: 20 cells of 2,500 x = x + i", lambda: read_submission(base / "hostile")),
            ("Canvas download of the example class (zip)", klass_of(canvas)),
            ("zip of 100,000 empty members in 50 folders", klass_of(many)),
        ]
        for label, function in rows:
            print(f"{label:50s} {cpu(function, args.repeat) * 1000:9.1f} ms CPU")
        print(json.dumps({"notebook_bytes": (base / "recognised" / "ch3.ipynb").stat().st_size}))


if __name__ == "__main__":
    main()
