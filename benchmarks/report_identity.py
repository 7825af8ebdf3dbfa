"""Whether a change to the kit left every report the same: grade a fixed corpus, fingerprint its reports.

    python benchmarks/report_identity.py corpus DIR            # write the corpus (a class per track)
    python benchmarks/report_identity.py snapshot DIR OUT.json # grade DIR's classes, hash every report
    python benchmarks/report_identity.py compare A.json B.json # the reports that differ (exit 1 if any)

The corpus: the example class, every single AST mutant of the reference (benchmarks/mutation.py),
the buggy submissions (tests/submissions/buggy.toml), the hand-written correct submissions and code
shapes of tests/submissions/, and the MindSpore track's example class and test submissions. Each
report file is hashed with what changes with every change to the kit's code (results.json's
`content_hash`, which includes the kit's fingerprint) left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from mutation import MODULES, single_mutants, solution_sources

from tests.buggy import all_buggy

SUBMISSIONS = ROOT / "tests" / "submissions"
_CONTENT_HASH = re.compile(rb'"content_hash": "[0-9a-f]*"')


def write_corpus(out: Path) -> None:
    """OUT/pytorch/<student>/ and OUT/mindspore/<student>/: one class per track."""
    torch_class, ms_class = out / "pytorch", out / "mindspore"
    for student in sorted((ROOT / "examples" / "class").iterdir()):
        if student.is_dir():
            shutil.copytree(student, torch_class / f"example-{student.name}")
    reference = solution_sources()
    for index, mutant in enumerate(single_mutants()):
        folder = torch_class / f"mutant-{index:03d}"
        folder.mkdir(parents=True)
        for module in MODULES:
            text = mutant.source if module == mutant.module else reference[module]
            (folder / f"{module}.py").write_text(text, encoding="utf-8")
    for buggy in all_buggy():
        _write_case(ms_class if buggy.track == "mindspore" else torch_class, f"buggy-{buggy.name}", buggy.sources)
    for kind in ("correct", "shapes"):
        for case in sorted((SUBMISSIONS / kind).rglob("*.py")):
            folder = case.parent
            name = f"{kind}-" + "-".join(folder.relative_to(SUBMISSIONS / kind).parts)
            sources = {p.stem: p.read_text(encoding="utf-8") for p in folder.glob("*.py")}
            _write_case(ms_class if name.endswith("-ms") else torch_class, name, sources)
    for student in sorted((ROOT / "examples" / "mindspore-class").iterdir()):
        if student.is_dir():
            shutil.copytree(student, ms_class / f"example-{student.name}")


def _write_case(klass: Path, name: str, sources: dict[str, str]) -> None:
    """A student of KLASS handing in SOURCES (module -> text), the reference in every other module."""
    target = klass / name
    if target.exists():
        return
    base = _ms_reference() if name.endswith("-ms") else solution_sources()
    target.mkdir(parents=True)
    for module in MODULES:
        (target / f"{module}.py").write_text(sources.get(module, base[module]), encoding="utf-8")


def _ms_reference() -> dict[str, str]:
    folder = ROOT / "solutions" / "mindspore"
    return {
        m: re.sub(r"^from \.(\w+) import", r"from \1 import", (folder / f"{m}.py").read_text(), flags=re.M)
        for m in MODULES
    }


def snapshot(corpus: Path, out: Path, grade: str) -> dict[str, str]:
    """Grade each class of CORPUS with the `grade` program GRADE, then hash every report file."""
    hashes: dict[str, str] = {}
    for track in ("pytorch", "mindspore"):
        reports = out.parent / f"{out.stem}-reports" / track
        shutil.rmtree(reports, ignore_errors=True)
        subprocess.run([grade, str(corpus / track), "--out", str(reports), "--quiet", "--force"], check=True)
        for file in sorted(reports.rglob("*")):
            if file.is_file() and ".grader-cache" not in file.parts:
                data = _CONTENT_HASH.sub(b'"content_hash": ""', file.read_bytes())
                hashes[f"{track}/{file.relative_to(reports)}"] = hashlib.sha256(data).hexdigest()
    out.write_text(json.dumps(hashes, indent=1, sort_keys=True), encoding="utf-8")
    return hashes


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    differ = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    for key in sorted(before.keys() - after.keys()):
        print(f"only before: {key}")
    for key in sorted(after.keys() - before.keys()):
        print(f"only after:  {key}")
    for key in differ:
        print(f"differs:     {key}")
    same = len(before.keys() & after.keys()) - len(differ)
    print(f"{same} of {len(before.keys() | after.keys())} report files identical")
    return 1 if differ or before.keys() != after.keys() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    corpus = commands.add_parser("corpus")
    corpus.add_argument("dir", type=Path)
    snap = commands.add_parser("snapshot")
    snap.add_argument("dir", type=Path)
    snap.add_argument("out", type=Path)
    snap.add_argument("--grade", default=str(Path(sys.executable).parent / "grade"))
    cmp = commands.add_parser("compare")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "corpus":
        write_corpus(args.dir)
        return 0
    if args.command == "snapshot":
        print(f"{len(snapshot(args.dir, args.out, args.grade))} report files hashed")
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
