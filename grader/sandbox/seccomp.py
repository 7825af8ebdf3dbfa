"""A seccomp filter for the sandbox's processes (installed in the warm worker, inherited by every
child): the kernel's keyrings are out of reach.

A uid's keyrings outlive its processes: a key one student's child adds to its user keyring is
there for the next child of the same slot (the same uid), i.e. another student. Nothing in
grading needs keys, so add_key, request_key and keyctl fail with EPERM (as in Docker's default
profile). Where no memory group counts a submission's memory (`memory`), memfd_create, shmget
and msgget fail too, with ENOSYS: their pages (a memfd's, a System V segment's or message
queue's, which outlive every mapping) count against no limit of a process. Syscalls of another
ABI than the interpreter's (i386 or x32 on x86-64) fail too, so that the same calls cannot be
made under other numbers. Copied into the sandbox: standard library only.
"""

from __future__ import annotations

import ctypes
import platform
import struct

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
X32_SYSCALL_BIT = 0x40000000
ENOSYS = 38
# machine -> (AUDIT_ARCH_*, numbers of add_key, request_key, keyctl)
ARCHES = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}
BLOCKED_NAMES = ("add_key", "request_key", "keyctl")
# memfd_create, shmget and msgget, refused (as by a kernel without them: libraries fall back to
# files) where no memory group counts their pages (see `child.block_keyrings`); neither machine
# has the multiplexed ipc() call, and other ABIs are refused whole
UNCOUNTED = {"x86_64": (319, 29, 68), "aarch64": (279, 194, 186)}

# classic BPF
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
RET_K = 0x06
NR_OFFSET, ARCH_OFFSET = 0, 4  # struct seccomp_data


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(arch: int, blocked: tuple[int, ...], missing: tuple[int, ...] = ()) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions: `blocked` = EPERM, `missing` = ENOSYS,
    anything else is allowed."""
    deny = (RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)
    allow = (RET_K, 0, 0, SECCOMP_RET_ALLOW)
    checks = [(JEQ_K, 0, 0, number) for number in blocked]
    # each `missing` call: if it matches, skip nothing and return ENOSYS; else go on past that return
    absent = [i for number in missing for i in ((JEQ_K, 0, 1, number), (RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS))]
    body = [(LD_W_ABS, 0, 0, NR_OFFSET), (JGE_K, 0, 0, X32_SYSCALL_BIT), *absent, *checks, allow, deny]
    # jumps are relative: every check that matches goes to `deny`, the last instruction
    for index, (code, _, jf, k) in enumerate(body):
        if code == JGE_K or (code == JEQ_K and jf == 0):
            body[index] = (code, len(body) - index - 2, 0, k)
    head = [(LD_W_ABS, 0, 0, ARCH_OFFSET), (JEQ_K, 1, 0, arch), deny]
    return head + body


def install(libc: ctypes.CDLL, uncounted: bool = False) -> bool:
    """Install the filter on this process (and so on everything it starts); `uncounted`: refuse
    memfd_create, shmget and msgget too. Needs no_new_privs (or CAP_SYS_ADMIN). False where it could not be
    installed (an unknown machine)."""
    known = ARCHES.get(platform.machine())
    if known is None or struct.calcsize("P") != 8:
        return False
    arch, blocked = known
    instructions = program(arch, blocked, UNCOUNTED[platform.machine()] if uncounted else ())
    filters = (_Filter * len(instructions))(*[_Filter(*i) for i in instructions])
    prog = _Program(len(instructions), filters)
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
