"""The kit out of the code under test's reach: what produces a child's outputs is bound before the
first line of student code runs, and no name a student module can import or rebind leads to it.

A student's module runs in the same Python process as the probes that judge it. Left as they are,
the kit's modules would be the student's to change: `import grader.probes` at a module's top, then
a probe replaced in `PROBES`, a helper (`tensor`, `transplant`) rebound, the driver's modes or the
codec swapped, and the child would send outputs its probes never made. So the fork server, once
warm and before it forks any child, takes every module of the kit (`grader` and `grader.*`) out of
`sys.modules` (`hide_kit`). What the kit runs keeps working: its functions reach each other through
their own module globals and the references the fork server holds (the probe table, a private copy,
is the driver loop's argument). A student's `import grader.probes` in the child then imports a fresh
copy of the kit's files (or fails); changing that copy changes nothing the grader uses.

What this does not do: Python gives no isolation inside one process. Code under test can still
find the kit's objects without a name: the garbage collector (`gc.get_objects`), the frames above
its own (`sys._getframe`), a function's `__globals__` or `__code__`, and torch or the standard
library, which the probes share with it. No point may rest on that evidence alone: the hidden
suites judge outputs (values against the reference, and properties only together with the work
they are about: outputs that depend on the input), so a forgery must still look like the work done.
"""

from __future__ import annotations

import sys

KIT = "grader"


def hide_kit() -> list[str]:
    """Take the kit's modules out of `sys.modules`; returns their names. Run once in the warm fork
    server, after the last import any child needs (a child imports nothing of the kit by name)."""
    names = [name for name in sys.modules if name == KIT or name.startswith(KIT + ".")]
    for name in names:
        del sys.modules[name]
    return names
