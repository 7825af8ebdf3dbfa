"""Tries to reach the network (to fetch answers, or to leak the inputs)."""
import socket

CHEAT = any(name != "lo" for _, name in socket.if_nameindex())
for host in (("1.1.1.1", 53), ("8.8.8.8", 53), ("127.0.0.1", 22)):
    try:
        socket.create_connection(host, timeout=1).close()
        CHEAT = True
    except OSError:
        pass
