"""The host-side canary of the egress guards: a TCP listener and a UDP socket on the host's
127.0.0.1 that count whatever reaches them while a sandbox's probe tries to get out, so a
probe's refused connect counts as a pass only when nothing arrived on the host either."""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Canary:
    """A TCP listener and a UDP socket on the host's 127.0.0.1, counting whatever reaches
    them: a probe's failed connect only counts when nothing arrived here either."""

    port: int
    tcp_accepted: int = 0
    udp_received: int = 0

    def snapshot(self) -> dict[str, int]:
        return {"port": self.port, "tcp_accepted": self.tcp_accepted,
                "udp_received": self.udp_received}


def bind_loopback_pair() -> tuple[socket.socket, socket.socket]:
    """A TCP and a UDP socket bound to the same free port on the host's 127.0.0.1."""
    for _ in range(20):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", tcp.getsockname()[1]))
            return tcp, udp
        except OSError:
            tcp.close()
            udp.close()
    raise OSError("could not bind a TCP and UDP port pair on 127.0.0.1")


@contextmanager
def loopback_canary() -> Iterator[Canary]:
    tcp, udp = bind_loopback_pair()
    port = tcp.getsockname()[1]
    tcp.listen(8)
    tcp.setblocking(False)
    udp.setblocking(False)
    canary = Canary(port)
    stop = threading.Event()

    def watch() -> None:
        # A short select, so that closing the canary costs milliseconds, not a timeout.
        while not stop.is_set():
            ready, _, _ = select.select([tcp, udp], [], [], 0.01)
            for sock in ready:
                try:
                    if sock is tcp:
                        conn, _ = tcp.accept()
                        conn.close()
                        canary.tcp_accepted += 1
                    else:
                        udp.recvfrom(65536)
                        canary.udp_received += 1
                except OSError:
                    continue

    thread = threading.Thread(target=watch, name="sandbench-canary", daemon=True)
    thread.start()
    try:
        yield canary
    finally:
        stop.set()
        thread.join(timeout=2)
        tcp.close()
        udp.close()
