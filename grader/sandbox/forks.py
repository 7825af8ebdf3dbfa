"""Between the watcher and the fork server (see `worker`): a Unix socket pair, one message each way
at a time (SOCK_SEQPACKET), and nothing of a student ever on it.

  fork server -> watcher, once warmed up:  {"probes": [...], "modes": [...]}, what a child can run
  watcher -> fork server:                  {"fork": true}, with two descriptors: the child's result
                                           pipe (write end) and its command pipe (read end)
  fork server -> watcher:                  {"pid": pid} once forked, then {"status": wait status}
                                           once the child is dead and every process it left is reaped

The child reads its job (its probes, the mode, the limits, the folder of the submission's files)
from its command pipe, which only the watcher writes: the fork server passes the descriptors on
without reading them. Copied into the sandbox: standard library only.
"""

from __future__ import annotations

import json
import os
import select
import socket

MESSAGE_BYTES = 1 << 16
ANSWER_SECONDS = 60.0  # for the fork server to fork, or to reap a killed child and what it left (2 s at most)
# Exit statuses of a child whose own (the kit's) code failed: reported as a crash, not as an exit.
FAILED, NOT_DROPPED, NO_NAMESPACE = 70, 71, 72


class ForkServerGone(RuntimeError):
    """The fork server did not answer (it died, or broke the protocol)."""


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """(the watcher's end, the fork server's end)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(end: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(end, [data], list(fds))
    else:
        end.send(data)


def receive(end: socket.socket, fds: int = 0) -> tuple[dict | None, list[int]]:
    """The next message (None at the end of the socket) and the descriptors that came with it."""
    if fds:
        data, received, _, _ = socket.recv_fds(end, MESSAGE_BYTES, fds)
    else:
        data, received = end.recv(MESSAGE_BYTES), []
    if not data:
        return None, received
    message = json.loads(data)
    if type(message) is not dict:
        raise ValueError("not a message")
    return message, received


class Forker:
    """The watcher's side: asks the fork server for children and learns how they ended."""

    def __init__(self, end: socket.socket, server_pid: int):
        self.end, self.server_pid = end, server_pid

    def ready(self, seconds: float) -> dict:
        """What the warmed-up fork server can run: {"probes": [...], "modes": [...]}."""
        message = self._answer(seconds)
        if type(message.get("probes")) is not list or type(message.get("modes")) is not list:
            raise ForkServerGone("no ready message")
        return message

    def fork(self, result_fd: int, command_fd: int) -> int:
        """A new child, given the two descriptors; its pid."""
        try:
            send(self.end, {"fork": True}, (result_fd, command_fd))
        except OSError as exc:
            raise ForkServerGone(str(exc)) from None
        pid = self._answer(ANSWER_SECONDS).get("pid")
        if type(pid) is not int or pid <= 0:
            raise ForkServerGone("no pid")
        return pid

    def ended(self) -> int:
        """The wait status of the last child, once it and everything it left are reaped."""
        status = self._answer(ANSWER_SECONDS).get("status")
        if type(status) is not int:
            raise ForkServerGone("no status")
        return status

    def _answer(self, seconds: float) -> dict:
        try:
            if not select.select([self.end], [], [], seconds)[0]:
                raise ForkServerGone("no answer in time")
            message, _ = receive(self.end)
        except (OSError, ValueError) as exc:
            raise ForkServerGone(str(exc)) from None
        if message is None:
            raise ForkServerGone("the fork server ended")
        return message


def close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
