"""Appended to a correct module: attention_scores keeps more memory than the submission's limit
(LIMIT_MB, filled in by the test) where no per-process limit sees it, in 8 MB pieces (each file
below RLIMIT_FSIZE): WHERE = "memfd" (memfd_create files, never mapped), "shm" (files in
/dev/shm), "tmpfs" (files in its own folder, on the sandbox's /tmp), or "shared" (anonymous
shared mappings, a quarter in each of four processes: within each one's own limit). It raises
with what it managed to keep: a limit that counts these pages stops it first."""
import mmap
import os
import signal

WHERE = "{WHERE}"
LIMIT_MB = int("{LIMIT_MB}")
PIECE = 8 * 1024 * 1024
_kept = []


def _file(folder):
    path = os.path.join(folder, f"hoard-{len(_kept)}")
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    _kept.append(fd)
    return fd


def _pieces(count, make):
    for _ in range(count):
        fd = make()
        os.write(fd, b"x" * PIECE)


def _shared(count):
    for _ in range(count):
        piece = mmap.mmap(-1, PIECE, flags=mmap.MAP_SHARED)
        piece.write(b"x" * PIECE)
        _kept.append(piece)


def attention_scores(inputs):
    pieces = 2 * LIMIT_MB * 1024 * 1024 // PIECE  # twice the limit
    if WHERE == "memfd":
        _pieces(pieces, lambda: _kept.append(os.memfd_create("hoard")) or _kept[-1])
    elif WHERE == "shm":
        _pieces(pieces, lambda: _file("/dev/shm"))
    elif WHERE == "tmpfs":
        _pieces(pieces, lambda: _file(os.getcwd()))
    else:
        share = pieces // 4
        for _ in range(3):
            if os.fork() == 0:  # three more processes keep a quarter each, and wait
                try:
                    _shared(share)
                    signal.pause()
                finally:
                    os._exit(0)
        _shared(share)
        import time

        time.sleep(3)  # for the others to fill theirs
    raise RuntimeError(f"kept {pieces * 8} MB in {WHERE}")
