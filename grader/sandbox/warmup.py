"""What a warm worker does once, before it forks any child: import and exercise what every
submission uses, so that children start hot and share the worker's memory.

One warm-up per framework flavour (`SandboxPool(..., flavour=...)`, the worker's --flavour). A
flavour is a function run in the worker: it imports what its track's students use (the
framework itself included) and runs whatever code paths must be hot, but must leave no
background threads behind (a forked child of a multi-threaded parent can hang). `finish()`
always runs last. Copied into the sandbox: imports only the standard library, torch and probes
(and, in the MindSpore flavour, mindspore and the kit's adapter, `grader.frameworks`).
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable

import torch

from grader.frameworks.mindspore_adapter import prepare
from grader.probes import exercise3_3_gpt2_attention, load_all
from grader.probes.tracer import Tracer
from grader.sandbox import driver

# Imported before forking: children start faster, and a child that cannot reach the interpreter's
# directory (a private prefix such as /root/.pyenv, where neither bubblewrap nor the workers' own
# mount namespace could make it reachable: see mounts.reachable_parents, private_view) still finds
# the modules students commonly import. Costs about 10 ms once per worker, after torch.
PRELOAD = (
    "math",
    "cmath",
    "random",
    "itertools",
    "functools",
    "operator",
    "collections",
    "collections.abc",
    "dataclasses",
    "typing",
    "copy",
    "enum",
    "abc",
    "contextlib",
    "numbers",
    "fractions",
    "decimal",
    "statistics",
    "heapq",
    "bisect",
    "array",
    "string",
    "textwrap",
    "pprint",
    "struct",
    "ctypes.util",
    "json",
    "re",
    "time",
    "inspect",
    "warnings",
    "socket",
    "encodings.idna",
    "numpy",
    "torch.nn.functional",
    "torch.testing",
)


def preload(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            __import__(name)
        except ImportError:
            pass


def torch_flavour() -> None:
    """The PyTorch track: torch's common paths, the probes' GPT-2-size weights."""
    layer = torch.nn.Linear(4, 4)
    x = torch.randn(2, 3, 4)
    (torch.softmax(layer(x) @ x.transpose(1, 2), dim=-1).sum()).backward()
    driver.serialise({"ok": {"x": x}})
    with Tracer("/nonexistent"):  # the trace mode's first use (TorchFunctionMode, the trace hook)
        torch.softmax(layer(x), dim=-1)
    exercise3_3_gpt2_attention.prepare()  # GPT-2-size weights: made once here, shared by every child


# Imported by the MindSpore flavour before forking: what every MindSpore submission and the
# adapter use, and what the first op would otherwise import in every child.
MINDSPORE_PRELOAD = (
    "mindspore",
    "mindspore.nn",
    "mindspore.ops",
    "mindspore.graph._parse.compile_config",
    "mindspore.ops.tensor_method",  # imported by the first op otherwise: in every child
)


def mindspore_flavour() -> None:
    """The MindSpore track (also grades PyTorch code): torch's warm-up, then MindSpore imported and
    set up (`mindspore_adapter.prepare`: CPU, a 64 MB memory pool, synchronous kernels) WITHOUT
    running a single MindSpore op. The first op starts MindSpore's background threads; a child
    forked from a worker that ran one hangs at its first `.asnumpy()`. Each child runs its own
    first op (and starts its own threads: about 6 tasks, within `Limits.processes`).

    Measured with MindSpore 2.10 (benchmarks/mindspore_child.py): MindSpore's first use in a
    child (its first op, kernel selection, the first gradient graph) is 0.1-0.5 s, 12-38 % of its
    CPU time for a whole submission (0.7-1.7 s; runs on a loaded 2-core machine); the rest is MindSpore's own per-op and
    per-Cell cost in the student's code. Running ops here first is no way out either: a child of a
    worker that ran a few ops survives plain 2-D ops, which makes a quick test look fine, but then
    spins at full CPU in its first batched `@` (matmul_ext, e.g. sec3_5's `queries @ keys.T`;
    12 children of 12), as a wait for the worker's kernel threads would: a forked child has none
    of them. Building Cells (nn.Dense, nn.Dropout, Parameters) runs no op and is safe,
    but saves nothing measurable."""
    torch_flavour()
    for name in MINDSPORE_PRELOAD:
        __import__(name)
    prepare()


FLAVOURS: dict[str, Callable[[], None]] = {"torch": torch_flavour, "mindspore": mindspore_flavour}


def warm_up(flavour: str, forks: int = 0) -> None:
    """The common part (the probes, the modules students import), the flavour's, then `finish` for
    a worker that will fork many children (`forks`: about how many; 0: not known)."""
    if flavour not in FLAVOURS:
        raise SystemExit(f"unknown sandbox flavour {flavour!r}; known: {', '.join(sorted(FLAVOURS))}")
    torch.set_num_threads(1)  # a forked child of a multi-threaded parent can hang in OpenMP
    preload(PRELOAD)
    load_all()
    FLAVOURS[flavour]()
    if not 0 < forks < FINISH_FROM:
        finish()


# Children from which `finish` pays off: it costs about 100 ms of CPU (the collection, 90 ms, and the
# huge pages, 13 ms) and saves about 8 ms per child (benchmarks/floors.py); a worker for one
# submission (Gradescope, PrairieLearn) starts that much sooner without it.
FINISH_FROM = 12


def finish() -> None:
    """Everything allocated so far lives as long as the worker: move it out of the collector's
    reach, so that a collection in a child never writes to (and so copies) the pages it shares
    with the worker; then back the worker's memory with huge pages."""
    gc.collect()
    gc.freeze()
    use_huge_pages()


MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 << 20


def use_huge_pages() -> None:
    """Back the warm worker's anonymous memory with 2 MB pages, so that forking a child is cheap.

    A fork copies one page-table entry per mapped 4 kB page of private memory, and the child's
    exit drops them again: with torch loaded that is ~160 MB, some 40,000 entries, and it cost
    about 20 ms of CPU per submission on a 2-core VM, more than most submissions' probes. Huge
    pages cut it to ~6 ms. A child that writes to a shared huge page gets 4 kB copies, as before.
    Best effort: on kernels without MADV_COLLAPSE or with huge pages disabled nothing changes.
    """
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        anonymous = len(fields) < 6 or fields[5] == "[heap]"
        if not (fields[1].startswith("rw") and anonymous):
            continue
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end > start:
            madvise(start, end - start, MADV_COLLAPSE)
