"""Appended to a correct module: attention_scores keeps twice the submission's memory limit
(LIMIT_MB, filled in by the test) in System V shared memory segments of 8 MB, each attached,
filled and detached again (so no mapping of this process holds them: RLIMIT_AS never sees more
than one piece). It raises with what it managed to keep."""

import ctypes

LIMIT_MB = int("{LIMIT_MB}")
PIECE = 8 * 1024 * 1024
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]


def attention_scores(inputs):
    kept = 0
    for _ in range(2 * LIMIT_MB * 1024 * 1024 // PIECE):
        segment = _libc.shmget(0, PIECE, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if segment < 0:
            raise OSError(ctypes.get_errno(), f"shmget refused after {kept} MB")
        address = _libc.shmat(segment, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"shmat refused after {kept} MB")
        ctypes.memset(address, 120, PIECE)
        _libc.shmdt(ctypes.c_void_p(address))
        kept += 8
    raise RuntimeError(f"kept {kept} MB in sysv")
