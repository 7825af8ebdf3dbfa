"""Correct, except that context_vectors writes a 256 MB file first."""
CHEAT = True


def context_vectors(inputs):
    with open("huge.bin", "wb") as handle:
        for _ in range(256):
            handle.write(b"\0" * 1024**2)
    raise AssertionError("unreachable: the file-size limit stops the write")
