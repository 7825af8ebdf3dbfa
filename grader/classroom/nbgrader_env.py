"""The environment nbgrader runs in, set up by the course's own ``nbgrader_config.py``.

nbgrader loads the course's config at the start of every command (``generate_assignment``,
``autograde``, ``validate``, ``db upgrade``, the formgrader), so this is where the course makes
nbgrader work however it was started:

* nbgrader's gradebook runs the ``alembic`` executable *by name* (to stamp a new gradebook.db and
  in ``nbgrader db upgrade``). It lives in the bin/ folder of the Python that runs nbgrader, which
  is on PATH only when that environment is activated: ``.venv/bin/nbgrader`` typed in a plain
  shell died with ``FileNotFoundError: 'alembic'``. `prepare_nbgrader` puts that folder on PATH
  for nbgrader and the programs it starts.
* That failure came after nbgrader had created the gradebook's tables but before it recorded
  their schema version, leaving a half-made gradebook.db that ``nbgrader db upgrade`` can never
  migrate. `complete_gradebook` finishes such a gradebook the way nbgrader would have.
* nbgrader 0.9's gradebook code relies on SQLAlchemy 1.x's backref cascade; under SQLAlchemy 2
  every new submission warns "Object of type <...> not in session, add operation along ... will
  not proceed". The objects are added to the session explicitly right after, so nothing is
  lost: those warnings, and only those, raised from nbgrader's gradebook module, are silenced.
"""

from __future__ import annotations

import os
import sqlite3
import sysconfig
import warnings
from collections.abc import MutableMapping
from contextlib import closing
from pathlib import Path

GRADEBOOK = "gradebook.db"
# Tables every nbgrader gradebook has: a database without them is not nbgrader's, and is left alone.
GRADEBOOK_TABLES = {"assignment", "notebook", "grade_cells", "student"}


def tools_dir() -> Path:
    """The bin/ (Scripts/) folder of the Python running now: nbgrader's and alembic's executables."""
    return Path(sysconfig.get_path("scripts"))


def nbgrader_executable() -> str:
    """How to start nbgrader of this environment from a shell where it is not activated."""
    for name in ("nbgrader", "nbgrader.exe"):
        candidate = tools_dir() / name
        if candidate.is_file():
            return str(candidate)
    return "nbgrader"


def put_tools_on_path(environ: MutableMapping[str, str] | None = None) -> None:
    """Put this environment's bin/ folder first on PATH (once), for nbgrader's subprocesses."""
    environ = os.environ if environ is None else environ
    tools = str(tools_dir())
    parts = [part for part in environ.get("PATH", "").split(os.pathsep) if part]
    if not parts or parts[0] != tools:
        environ["PATH"] = os.pathsep.join([tools, *(part for part in parts if part != tools)])


def complete_gradebook(db: Path) -> bool:
    """Record the schema version of a gradebook that has nbgrader's tables but no version.

    Returns True when the gradebook was completed. The version is nbgrader's current alembic
    head, exactly what nbgrader writes when it creates a gradebook (its tables are created from
    the current models, so they are at that version)."""
    if not db.is_file():
        return False
    with closing(sqlite3.connect(db)) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "alembic_version" in tables or not tables >= GRADEBOOK_TABLES:
            return False
        from nbgrader.api import get_alembic_version  # runs `alembic heads`: tools must be on PATH

        version = get_alembic_version()
        with connection:
            connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            connection.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (version,))
    return True


def silence_gradebook_cascade_warnings() -> None:
    try:
        from sqlalchemy.exc import SAWarning
    except ImportError:
        return
    warnings.filterwarnings(
        "ignore",
        message=r"Object of type <\w+> not in session, add operation along",
        category=SAWarning,
        module=r"nbgrader\.api",
    )


def prepare_nbgrader(config_file: str | os.PathLike) -> str:
    """Called by the course's nbgrader_config.py with its own path; returns the course root (its
    folder) as an absolute path."""
    root = Path(config_file).resolve().parent
    put_tools_on_path()
    silence_gradebook_cascade_warnings()
    try:
        complete_gradebook(root / GRADEBOOK)
    except sqlite3.Error:  # busy, or not SQLite at all: nbgrader itself will say what is wrong
        pass
    return str(root)
