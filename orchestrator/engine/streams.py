"""The two streams the engine keeps open to a container: one `docker exec`'s output, and
the container's attach stream (the resident executor's channel). Neither is ever retried."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import docker
import requests.exceptions

from orchestrator.errors import EngineError


class ExecStream:
    """One started `docker exec`: its (stdout, stderr) chunks as they arrive, then the exec's
    exit code. A broken stream ends the chunks and is kept in `broken`, never raised: the
    caller's decoder says what a cut-off stream means. `inspect` asks the engine about the
    exec through the engine's own call (its retries, its errors)."""

    def __init__(self, api: docker.APIClient, exec_id: str,
                 inspect: Callable[[], dict[str, Any]]) -> None:
        self._inspect = inspect
        self._api = api
        self._exec_id = exec_id
        self.broken: str | None = None

    def chunks(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        try:
            yield from self._api.exec_start(self._exec_id, stream=True, demux=True)
        except (requests.exceptions.RequestException, OSError) as exc:
            self.broken = str(exc) or type(exc).__name__

    def exit_code(self) -> int | None:
        """The exec's exit code, or None when the engine no longer knows the exec."""
        try:
            return self._inspect()["ExitCode"]
        except EngineError:
            return None

    def close(self) -> None:
        self._api.close()


class AttachChannel:
    """A container's attach stream: its stdin to write, its stdout and stderr to read,
    demultiplexed (the container has no TTY, so each chunk comes with the engine's 8-byte
    header naming its stream). Opened once for a sandbox's life and never retried; reads
    block until the container writes or stops."""

    STDOUT, STDERR = 1, 2

    def __init__(self, api: docker.APIClient, response: Any) -> None:
        self._api = api
        self._response = response  # holds the engine's connection open
        # A plain stream (a unix or tcp socket's, as a socket or the SDK's SocketIO) is read
        # through a descriptor of our own; a socket subclass is read as it is: a TLS engine's
        # descriptor carries records, not the stream, and an ssh:// one's stream runs through
        # an ssh process, not its descriptor.
        plain = not isinstance(response, socket.socket) or type(response) is socket.socket
        self._sock = socket.socket(fileno=os.dup(response.fileno())) if plain else response
        self._sock.settimeout(None)

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise EngineError("the container's attach stream is closed",
                              why=str(exc) or type(exc).__name__) from exc

    def receive(self) -> tuple[int, bytes] | None:
        """The next (stream, bytes) the container wrote; None once the stream has ended."""
        header = self._exactly(8)
        if header is None:
            return None
        payload = self._exactly(int.from_bytes(header[4:], "big"))
        return None if payload is None else (header[0], payload)

    def _exactly(self, size: int) -> bytes | None:
        data = bytearray()
        while len(data) < size:
            try:
                chunk = self._sock.recv(min(size - len(data), 1 << 20))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def close(self) -> None:
        for close in (self._sock.close, self._response.close, self._api.close):
            with contextlib.suppress(OSError):
                close()
