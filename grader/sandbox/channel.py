"""The framed pipes between the sandbox's processes (child -> worker -> trusted pool).

A frame is a 4-byte big-endian header length, a JSON header (a dict whose "size" is the number
of payload bytes that follow), then the payload. Used on both sides of the boundary, so it is
copied into the sandbox: it imports only the standard library.

Reading never trusts the other end: a header is at most MAX_HEADER bytes, a payload is read into
one buffer of exactly its size (or skipped without being kept), and every wait ends at a deadline
given as a function that returns the seconds left (so a caller can make it absolute, or derive it
from another clock). Nothing the writer sends can move a deadline.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable

MAX_HEADER = 64 * 1024
READ_CHUNK = 1 << 20
OUTBOX_BYTES = 256 * 1024  # frames an `Outbox` holds before it writes them without waiting

Remaining = Callable[[], float]  # seconds left to wait; <= 0 when the deadline has passed


class ChannelError(ValueError):
    """What came down the pipe is not a well-formed frame."""


def until(deadline: float) -> Remaining:
    """An absolute deadline on the monotonic clock."""
    return lambda: deadline - time.monotonic()


def frame(header: dict, payload: bytes | bytearray = b"") -> bytes:
    return frame_head(header, len(payload)) + payload


def frame_head(header: dict, size: int) -> bytes:
    """A frame without its payload (for writing a large payload without copying it)."""
    head = json.dumps(dict(header, size=size)).encode()
    return struct.pack(">I", len(head)) + head


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Outbox:
    """Frames written to a pipe in batches: the watcher's results go to the trusted pool
    through one (see `grader.sandbox.job`), so that a child's results reach the pool in about one
    write (one wake-up of the pool's reader thread), not one per probe."""

    def __init__(self, fd: int, limit: int = OUTBOX_BYTES):
        self.fd = fd
        self.limit = limit  # bytes held that are written without waiting for the next `flush`
        self.frames: list[bytes] = []
        self.size = 0  # bytes in `frames`

    def send(self, header: dict, payload: bytes = b"") -> None:
        """Write a frame now, after the frames still held (`post`)."""
        self.post(header, payload)
        self.flush()

    def post(self, header: dict, payload: bytes | bytearray = b"") -> None:
        """A frame, written later with the ones that follow: when the outbox is flushed (the watcher
        flushes it once a child is dead, see `job.JobProcess.end`), with any frame that is `send`
        at once (a job's "done"), and as soon as it holds `limit` bytes. A watcher killed by a
        signal loses what it holds: the pool runs those probes again, as it runs every
        probe a dead worker never answered."""
        data = frame(header, payload)
        self.frames.append(data)
        self.size += len(data)
        if self.size >= self.limit:
            self.flush()

    def flush(self) -> None:
        """Write what the outbox holds, in one write."""
        if self.frames:
            data = b"".join(self.frames)
            self.frames.clear()
            self.size = 0
            write_all(self.fd, data)


class FrameReader:
    """Reads frames from a pipe, buffered: one read takes every small frame already written."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def _wait(self, remaining: Remaining) -> None:
        while True:
            left = remaining()
            if left <= 0:
                raise TimeoutError
            if select.select([self.fd], [], [], min(left, 60.0))[0]:
                return

    def _fill(self, count: int, remaining: Remaining) -> bool:
        """At least `count` bytes in the buffer (False at end of file)."""
        while len(self.buffer) < count:
            self._wait(remaining)
            chunk = os.read(self.fd, max(count - len(self.buffer), 1 << 16))
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def header(self, remaining: Remaining) -> dict | None:
        """The next frame's header (its payload not read yet); None at end of file."""
        if not self._fill(4, remaining):
            return None
        (length,) = struct.unpack(">I", self.buffer[:4])
        if length > MAX_HEADER:
            raise ChannelError("header too long")
        if not self._fill(4 + length, remaining):
            return None
        raw = bytes(self.buffer[4 : 4 + length])
        del self.buffer[: 4 + length]
        try:
            header = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ChannelError("header is not JSON") from exc
        if type(header) is not dict or type(header.get("size")) is not int or header["size"] < 0:
            raise ChannelError("not a frame header")
        return header

    def payload(self, size: int, remaining: Remaining) -> bytearray | None:
        """Exactly `size` bytes, in one buffer of that size; None at end of file."""
        data = bytearray(size)
        view = memoryview(data)
        taken = min(size, len(self.buffer))
        view[:taken] = self.buffer[:taken]
        del self.buffer[:taken]
        while taken < size:
            self._wait(remaining)
            count = os.readv(self.fd, [view[taken : taken + READ_CHUNK]])
            if not count:
                return None
            taken += count
        return data

    def skip(self, size: int, remaining: Remaining) -> bool:
        """Read and drop `size` bytes, never holding more than one chunk; False at end of file."""
        taken = min(size, len(self.buffer))
        del self.buffer[:taken]
        size -= taken
        while size:
            self._wait(remaining)
            chunk = os.read(self.fd, min(size, READ_CHUNK))
            if not chunk:
                return False
            size -= len(chunk)
        return True
