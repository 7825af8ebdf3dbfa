"""The kit's own tests."""

import sys
from pathlib import Path

# the benchmarks' corpus and in-process grading of the kit's own code, importable by the tests;
# appended, so that their files never shadow a package
sys.path.append(str(Path(__file__).resolve().parent.parent / "benchmarks"))
