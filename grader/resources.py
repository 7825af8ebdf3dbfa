"""The kit's own files that are not code, found through the package (`importlib.resources`).

Everything the kit reads at run time ships inside the `grader` package, in a checkout and in an
installed wheel alike:

    grader/templates/         the report, classroom and bundle templates, and the message
                              catalogues (templates/i18n/<lang>/*.toml)
    grader/exercises/         the stubs students get (zh/, mindspore/, mindspore/zh/: other editions)
    grader/suites/hidden/     the hidden suites and their pytest.ini

The kit needs them as real folders (jinja2 and pytest read folders; the sandbox hides them from
student code by their path), so a zipped install is not supported: `folder` says so plainly.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def folder(package: str, *parts: str) -> Path:
    """The folder (or file) `parts` inside `package`, as a path on disk."""
    path = Path(str(resources.files(package).joinpath(*parts)))
    if not path.exists():
        raise FileNotFoundError(f"{package} is installed without {'/'.join(parts) or 'its files'} ({path})")
    return path


KIT_DIR = folder("grader")
TEMPLATES_DIR = folder("grader", "templates")
STUBS_DIR = folder("grader", "exercises")
