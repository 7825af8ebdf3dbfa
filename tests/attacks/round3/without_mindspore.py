"""Run `grade` as on a kit installed without the `mindspore` extra (what `make setup` gives).

The trusted process is made to see no MindSpore at all: `import mindspore` raises
ModuleNotFoundError, `importlib.util.find_spec("mindspore")` is None and the package has no
metadata (`importlib.metadata.version("mindspore")` raises PackageNotFoundError), exactly as when
the package is not installed. Usage: python without_mindspore.py GRADE-ARGUMENTS...
"""
import importlib.metadata
import sys

sys.modules["mindspore"] = None  # what the import system answers for a package that is not there
_from_name = importlib.metadata.Distribution.from_name.__func__


def _no_mindspore(cls, name):
    if name.lower().replace("_", "-") == "mindspore":
        raise importlib.metadata.PackageNotFoundError(name)
    return _from_name(cls, name)


importlib.metadata.Distribution.from_name = classmethod(_no_mindspore)

if __name__ == "__main__":
    from grader.cli import main

    sys.exit(main(sys.argv[1:]))
