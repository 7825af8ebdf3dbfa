"""A realistic class for the speed benchmarks: the report identity corpus's PyTorch track (the
example class, every single AST mutant of the reference, the hand-written buggy, shape-bug and
correct submissions of tests/submissions/), cycled to any size, each copy made unique with a
comment so that nothing is answered from a cache.

Its templates fall in three kinds:
- "correct": any correct implementation (alice, the correct alternatives, the reference itself);
- "buggy": the hand-written mistakes (bob, carol, frank, tests/submissions/buggy and shapes), each
  a misconception the diagnosis traces;
- "mixed": everything, the mutants included (most of them break the code: a name left unbound, a
  call with the wrong arguments) and dave (a syntax error) and erin (stubs left as they came).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutation import MODULES, solution_sources
from report_identity import write_corpus

KINDS = ("correct", "buggy", "mixed")
CORRECT_EXAMPLES = {"example-alice"}
BUGGY_EXAMPLES = {"example-bob", "example-carol", "example-frank"}


def templates(work: Path) -> dict[str, list[Path]]:
    """The corpus written under WORK (once), its submissions by kind."""
    root = work / "corpus"
    if not (root / "pytorch").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        write_corpus(root)
        reference = root / "pytorch" / "reference"
        reference.mkdir()
        for module, text in solution_sources().items():
            (reference / f"{module}.py").write_text(text, encoding="utf-8")
    folders = sorted(p for p in (root / "pytorch").iterdir() if p.is_dir())
    correct = [
        p for p in folders if p.name in CORRECT_EXAMPLES or p.name.startswith("correct-") or p.name == "reference"
    ]
    buggy = [p for p in folders if p.name in BUGGY_EXAMPLES or p.name.startswith(("buggy-", "shapes-"))]
    # every kind interleaved, so that any prefix of the class is a mix of them
    return {"correct": correct, "buggy": buggy, "mixed": _interleaved(folders)}


def _interleaved(folders: list[Path]) -> list[Path]:
    """Mutants spread among the other submissions (one in every few), in a fixed order."""
    mutants = [p for p in folders if p.name.startswith("mutant-")]
    others = [p for p in folders if not p.name.startswith("mutant-")]
    step = max(1, len(mutants) // max(1, len(others)))
    mixed: list[Path] = []
    for index, other in enumerate(others):
        mixed += [other, *mutants[index * step : (index + 1) * step]]
    return mixed + mutants[len(others) * step :]


def build_class(target: Path, count: int, sources: list[Path]) -> list[Path]:
    """COUNT students in TARGET, cycling through SOURCES, each made unique by a comment."""
    shutil.rmtree(target, ignore_errors=True)
    students = []
    for index in range(count):
        template = sources[index % len(sources)]
        student = target / f"{template.name}-{index:05d}"
        student.mkdir(parents=True)
        for module in MODULES:
            file = template / f"{module}.py"
            if file.is_file():
                (student / file.name).write_text(file.read_text(encoding="utf-8") + f"\n# copy {index}\n")
        students.append(student)
    return students
