"""The watcher's watch over its children (see `job`): what a job may still use as its probes
run (`RunningJob`), and one child's frames, checked for order, forwarded and charged (`Watch`).

Copied into the sandbox with `job`: it imports only the standard library and the sandbox's own
modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from grader.sandbox.channel import ChannelError, FrameReader, Outbox
from grader.sandbox.clocks import ModuleTime, ProbeClock

# A probe imports each of the seven modules at most once: more import notices than this are a
# child keeping the worker busy (its parsing is CPU time no clock of the child's counts).
MAX_NOTICES = 64

# How a child's watch ended: (its failure or None, the probe in progress, the module being imported)
Ending = tuple[str | None, str | None, str | None]


class RunningJob:
    """One job as its probes run: the job itself (id, mode, limits), its deadline (fixed when it
    starts, never moved by a child) and what it may still use: payload bytes to forward, and each
    module's share of wall-clock time."""

    def __init__(self, job: dict):
        self.job = job
        self.limits = job["limits"]
        self.submission_end = time.monotonic() + self.limits["submission_seconds"]
        self.result_bytes = self.limits["result_bytes"]  # payload bytes this job may still forward
        self.module_time = ModuleTime(self.limits["module_seconds"])

    def status(self, probe: str, status: str, **more: str) -> dict:
        """The header of a probe's status frame."""
        return {"id": self.job["id"], "probe": probe, "status": status, **more}


class Watch:
    """Forward a child's results while its frames come in the only order the driver writes them
    (start, imports, result, per probe, in the job's order); `remaining` loses each probe that got
    a result. The wall-clock time from a probe's start to its end (its result, or the child's end)
    is charged to the probe's module, and so is the time from its result to the next probe's start
    or the child's end (no time between two probes is nobody's: a child that sends a result of its
    own and goes on sleeping pays for the sleep)."""

    def __init__(
        self,
        reader: FrameReader,
        clock: ProbeClock,
        run: RunningJob,
        remaining: list[str],
        outbox: Outbox,
        strays: Callable[[int], bool],
    ):
        self.reader, self.clock, self.run, self.remaining, self.outbox = reader, clock, run, remaining, outbox
        self.strays = strays  # whether a process the child started has left its family (`cleanup.strays`)
        self.current: str | None = None  # the probe in progress
        self.importing: str | None = None  # the module it is importing
        self.notices = 0  # import notices of the probe in progress
        self.charged: str | None = None  # the probe whose module the time since `since` is charged to
        self.since = 0.0

    def watch(self) -> Ending:
        """Until the child ends, fails or has sent every result (or leaves something running)."""
        read, clock, remaining, frame = self.reader.header, self.clock, self.remaining, self._frame
        try:
            while remaining:
                header = read(clock)
                if header is None:
                    return None, self.current, self.importing
                ending = frame(header)
                if ending is not None:
                    return ending
        except TimeoutError:
            return "timeout", self.current, self.importing
        except (ChannelError, OSError):
            return "crash", self.current, self.importing  # garbage written to the result pipe
        finally:
            self._charge()  # the probe the child was running (or had run last) when it ended
        return None, self.current, self.importing

    def _frame(self, header: dict) -> Ending | None:
        kind, name, size = header.get("kind"), header.get("name"), header["size"]
        if kind == "result" and self.current is not None and name == self.current:
            return self._result(name, size)
        if size:
            raise ChannelError("only results carry a payload")
        if kind == "start" and self.current is None and name == self.remaining[0]:
            self._charge()
            self.current, self.charged, self.notices = name, name, 0
            self.clock.start(self.run.module_time(name))
        elif (
            kind == "import"
            and self.current is not None
            and self.importing is None
            and _module_name(name)
            and self.notices < MAX_NOTICES
        ):
            self.importing = name
            self.notices += 1
        elif kind == "imported" and self.importing is not None and name == self.importing:
            self.importing = None
        else:
            raise ChannelError("frame out of order")
        return None

    def _result(self, name: str, size: int) -> Ending | None:
        """The result of the probe in progress: forwarded if the job's bytes still cover it."""
        if size > self.run.limits["payload_bytes"]:
            return "too-large", self.current, None  # not even read: the child is killed
        if size > self.run.result_bytes:
            if not self.reader.skip(size, self.clock):
                return None, self.current, self.importing
            self.outbox.post(self.run.status(name, "too-large", module=""))
        else:
            payload = self.reader.payload(size, self.clock)
            if payload is None:
                return None, self.current, self.importing
            self.run.result_bytes -= size
            self.outbox.post(self.run.status(name, "ok"), payload)
        self.remaining.remove(name)
        self.current = self.importing = None
        if self.remaining and self.strays(self.clock.pid):
            return None, None, None  # the rest goes to a fresh child, with all its room
        return None

    def _charge(self) -> None:
        """Charge the time since `since` to the module of the probe charged (if any)."""
        now = time.monotonic()
        if self.charged is not None:
            self.run.module_time.charge(self.charged, now - self.since)
        self.since = now


def _module_name(name: object) -> bool:
    return type(name) is str and len(name) <= 100 and name.isidentifier()
