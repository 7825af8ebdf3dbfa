"""The watcher's outbox (grader.sandbox.channel.Outbox: post/send/flush): results wait and go
to the pool in one write, in the order they were given, never after a frame sent at once."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.sandbox.channel import OUTBOX_BYTES, FrameReader, Outbox, until


@pytest.fixture
def result_pipe():
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4 * OUTBOX_BYTES)  # a flush never waits for the reader
    os.set_blocking(read_fd, False)
    yield read_fd, Outbox(write_fd)
    os.close(read_fd)
    os.close(write_fd)


def written(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def frames(data: bytes) -> list[dict]:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4 * OUTBOX_BYTES)
    os.write(write_fd, data)
    os.close(write_fd)
    reader, found = FrameReader(read_fd), []
    while (header := reader.header(until(float("inf")))) is not None:
        found.append(dict(header, payload=bytes(reader.payload(header["size"], until(float("inf"))))))
    os.close(read_fd)
    return found


def test_posted_results_wait_and_go_before_a_frame_sent_at_once(result_pipe):
    pipe, outbox = result_pipe
    outbox.post({"id": 1, "probe": "a", "status": "ok"}, b"AAA")
    outbox.post({"id": 1, "probe": "b", "status": "timeout"})
    assert written(pipe) == b""
    outbox.send({"id": 1, "status": "done"})
    got = frames(written(pipe))
    assert [(f.get("probe"), f["status"], f["payload"]) for f in got] == [
        ("a", "ok", b"AAA"),
        ("b", "timeout", b""),
        (None, "done", b""),
    ]
    assert written(pipe) == b""


def test_flush_writes_the_outbox_once_and_empties_it(result_pipe):
    pipe, outbox = result_pipe
    outbox.post({"id": 2, "probe": "a", "status": "ok"}, b"1")
    outbox.flush()
    outbox.flush()
    assert [f["probe"] for f in frames(written(pipe))] == ["a"]


def test_a_full_outbox_is_written_without_waiting(result_pipe):
    pipe, outbox = result_pipe
    payload = b"x" * (OUTBOX_BYTES // 2)
    outbox.post({"id": 3, "probe": "a", "status": "ok"}, payload)
    assert written(pipe) == b""
    outbox.post({"id": 3, "probe": "b", "status": "ok"}, payload)
    assert [f["probe"] for f in frames(written(pipe))] == ["a", "b"]


END_WITH_THE_POOL_GONE = """
import os, sys, tempfile
from grader.sandbox import job
from grader.sandbox.channel import Outbox
gone, result_fd = os.pipe()
os.close(gone)  # the pool stopped reading: every write fails (EPIPE)
outbox = Outbox(result_fd)
ready, said = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.write(said, b"1")
    while True:
        os.pause()
os.read(ready, 1)
read_fd, write_fd = os.pipe()
outbox.post({"id": 1, "probe": "p", "status": "ok"}, b"x")


class Reaper:  # the fork server's part: this process is the child's parent
    server_pid = os.getpid()

    def ended(self):
        return os.waitpid(pid, 0)[1]


slot = job.Slot(int(sys.argv[1]), False, Reaper(), frozenset(), frozenset(), frozenset({os.getpid()}))
try:
    job.JobProcess(outbox, slot, tempfile.mkdtemp()).end(job.Child(pid, read_fd, -1))
except BrokenPipeError:
    pass
else:
    sys.exit("the write did not fail")
try:
    os.kill(pid, 0)
    sys.exit("the child lives on")
except ProcessLookupError:
    pass  # killed and reaped
sys.exit("its leftover is still there" if os.path.exists(sys.argv[2]) else 0)
"""


def test_a_failed_write_never_skips_the_childs_end(tmp_path):
    """The outbox is written when a child ends; a pool that is gone (the write fails) must not
    leave the child running or its files behind (the clean-up comes first, or regardless)."""
    import subprocess
    import sys
    import tempfile

    uid = 61234  # no process runs as this uid: only the child's own process group is killed
    handle, leftover = tempfile.mkstemp(dir="/tmp", prefix="outbox-leftover-")
    os.close(handle)
    try:
        if os.getuid() == 0:
            os.chown(leftover, uid, uid)  # as root, a leftover of the slot's uid is cleared
        else:
            os.unlink(leftover)  # not root: nothing to clear (see cleanup.clear_leftovers)
        done = subprocess.run(
            [sys.executable, "-c", END_WITH_THE_POOL_GONE, str(uid), leftover],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert done.returncode == 0, done.stderr
    finally:
        if os.path.exists(leftover):
            os.unlink(leftover)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("post"), st.integers(0, 200_000)),
            st.tuples(st.just("send"), st.integers(0, 2_000)),
            st.tuples(st.just("flush"), st.just(0)),
        ),
        max_size=10,
    )
)
def test_any_sequence_arrives_whole_and_in_order(steps):
    """Whatever mix of posts, sends and flushes: the pool reads every frame once, in the order
    given; after a send (or a flush) nothing is held back, and the outbox never holds
    OUTBOX_BYTES or more."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4 * OUTBOX_BYTES)
    os.set_blocking(read_fd, False)
    outbox = Outbox(write_fd)
    try:
        given_frames, data = [], b""
        for index, (kind, size) in enumerate(steps):
            header, payload = {"id": 1, "probe": f"p{index}", "status": kind}, bytes([index % 256]) * size
            given_frames.append((header["probe"], payload))
            if kind == "post":
                outbox.post(header, payload)
            elif kind == "send":
                outbox.send(header, payload)
            else:
                given_frames.pop()
                outbox.flush()
            data += written(read_fd)
            assert outbox.size < OUTBOX_BYTES
            assert outbox.size == sum(len(held) for held in outbox.frames)
            if kind != "post":
                assert outbox.frames == []
                arrived = [(f["probe"], f["payload"]) for f in frames(data)]
                assert arrived == given_frames
        outbox.flush()
        data += written(read_fd)
        assert [(f["probe"], f["payload"]) for f in frames(data)] == given_frames
    finally:
        os.close(read_fd)
        os.close(write_fd)
