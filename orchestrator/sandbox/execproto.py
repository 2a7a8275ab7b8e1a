"""The frame stream that `sandbench-exec` writes on its stdout, and a streaming decoder for it.

Every measured command runs as `docker exec ... sandbench-exec run --sweep [opts] -- ARGV...`
(images/base/sandbench-exec.c). The helper never lets the tool write to its stdout: it
re-emits the tool's stdout and stderr inside frames and ends with a result frame, so a
hostile tool cannot forge its own figures. Each frame is

    1 byte type | 4 bytes big-endian payload length | payload

`o`/`e` carry tool stdout/stderr chunks (at most 64 KiB), `r` the result (JSON, the last
frame of `run`), `p` the probe report (JSON, the only frame of `probe`), `x` a helper error
(text; followed by `r` when the helper could still give a result).

The decoder streams: it keeps at most one header and one metadata payload (`r`, `p`, `x`,
bounded by MAX_META_PAYLOAD) in memory and writes `o`/`e` payloads straight to the sinks,
so it can be fed gigabytes in chunks split anywhere. Anything it cannot vouch for sets
`protocol_error`; a caller must not score an exec whose decode has one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any, Final

from orchestrator.untrusted import decode as untrusted
from orchestrator.untrusted.errors import HostileInput

HELPER_VERSION: Final = "0.5.0"
"""The version `sandbench-exec` reports in `helper_version` (its HELPER_VERSION)."""

FRAME_STDOUT: Final = b"o"
FRAME_STDERR: Final = b"e"
FRAME_RESULT: Final = b"r"
FRAME_PROBE: Final = b"p"
FRAME_ERROR: Final = b"x"
FRAME_TYPES: Final = frozenset({FRAME_STDOUT, FRAME_STDERR, FRAME_RESULT, FRAME_PROBE,
                                FRAME_ERROR})

HEADER_SIZE: Final = 5
MAX_CHUNK: Final = 64 * 1024
"""Largest payload of an `o` or `e` frame."""
MAX_META_PAYLOAD: Final = 4 * 1024 * 1024
"""Largest payload of an `r`, `p` or `x` frame the decoder accepts (and buffers)."""

_INT: Final = (int,)
_OPT_INT: Final = (int, type(None))
_BOOL: Final = (bool,)
_STR: Final = (str,)
_OPT_STR: Final = (str, type(None))

RESULT_SCHEMA: Final[dict[str, tuple[type, ...]]] = {
    "helper_version": _STR,
    "wall_ns": _INT,
    "user_us": _INT,
    "sys_us": _INT,
    "maxrss_kb": _INT,
    "exit_code": _OPT_INT,
    "signal": _OPT_INT,
    "timed_out": _BOOL,
    "oom_kills": _OPT_INT,
    "stdout_bytes": _INT,
    "stderr_bytes": _INT,
    "stdout_truncated": _BOOL,
    "stderr_truncated": _BOOL,
    "stray_killed": _INT,
    "stray_swept": _INT,
    "spawn_error": _OPT_STR,
    "cap_bytes": _INT,
    "timeout_ms": _INT,
    "grace_ms": _INT,
}
"""Every key of a result frame and the JSON types its value may have (null as NoneType)."""

RESULT_KEYS: Final = frozenset(RESULT_SCHEMA)

PROBE_KEYS: Final = frozenset({
    "helper_version", "uid", "gid", "groups", "status", "interfaces", "routes_v4",
    "routes_v6", "lookup", "connect", "udp", "write", "mounts", "image_helpers", "pid1_fds",
    "no_new_privs", "pid1_status", "pid1_signal", "pid1_environ", "pid1_fd_opens",
    "writable", "cgroup",
})
"""Every key of a probe report. Facts only: the guards decide what passes."""


class ProtocolError(ValueError):
    """A frame payload that breaks the protocol (bad JSON, missing or mistyped keys)."""


@dataclass(frozen=True)
class DecodedExec:
    """What one exec stream held. `result` and `probe` are only set when valid."""

    result: dict[str, Any] | None
    probe: dict[str, Any] | None
    helper_errors: list[str]
    stdout_written: int
    stderr_written: int
    stdout_sha256: str
    stderr_sha256: str
    protocol_error: str | None


def encode_frame(kind: bytes, payload: bytes) -> bytes:
    """One frame, as the helper writes it."""
    if kind not in FRAME_TYPES:
        raise ValueError(f"unknown frame type {kind!r}")
    return kind + len(payload).to_bytes(4, "big") + payload


def _json_object(payload: bytes, what: str) -> dict[str, Any]:
    """Strict JSON within untrusted.decode's bounds: UTF-8, an object at the top, no
    duplicate keys, no NaN/Infinity, no number past 40 characters, no deep nesting."""
    try:
        obj = untrusted.loads(payload, what=what, unique_keys=True)
    except HostileInput as exc:
        if exc.kind == "not-utf8":
            raise ProtocolError(f"{what} is not UTF-8: {exc.message}") from exc
        if exc.kind == "bad-number" and exc.data.get("found") in ("NaN", "Infinity",
                                                                   "-Infinity"):
            raise ProtocolError(f"{what} is not valid JSON: non-standard JSON constant "
                                f"{exc.data['found']}") from exc
        raise ProtocolError(f"{what} is not valid JSON: "
                            f"{exc.message.removeprefix(what + ': ')}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return obj


def parse_result(payload: bytes) -> dict[str, Any]:
    """The result frame's JSON, checked against RESULT_SCHEMA (exact keys, types, >= 0)."""
    result = _json_object(payload, "result")
    missing = sorted(RESULT_KEYS - result.keys())
    unknown = sorted(result.keys() - RESULT_KEYS)
    if missing or unknown:
        raise ProtocolError(f"result keys wrong: missing {missing}, unknown {unknown}")
    for key, kinds in RESULT_SCHEMA.items():
        value = result[key]
        # bool is an int in Python; a JSON true is never a valid count.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ProtocolError(f"result {key}: expected {' or '.join(k.__name__ for k in kinds)}"
                                f", found {value!r}")
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            raise ProtocolError(f"result {key}: expected >= 0, found {value}")
    return result


def parse_probe(payload: bytes) -> dict[str, Any]:
    """The probe frame's JSON, with every key of PROBE_KEYS present."""
    probe = _json_object(payload, "probe report")
    missing = sorted(PROBE_KEYS - probe.keys())
    if missing:
        raise ProtocolError(f"probe report lacks keys {missing}")
    return probe


class _CappedSink:
    """Writes at most `cap` bytes to a sink and hashes exactly what it wrote."""

    def __init__(self, sink: IO[bytes], cap: int) -> None:
        self.sink = sink
        self.cap = cap
        self.received = 0
        self.written = 0
        self.sha256 = hashlib.sha256()

    def write(self, data: memoryview) -> None:
        self.received += len(data)
        room = self.cap - self.written
        if room <= 0:
            return
        part = bytes(data[:room])  # a copy: the sink may keep it, the chunk may be reused
        self.sink.write(part)
        self.sha256.update(part)
        self.written += len(part)


class _Decoder:
    """Frame state machine. Feed it chunks; after the first protocol error it ignores input."""

    def __init__(self, stdout_sink: IO[bytes], stderr_sink: IO[bytes], cap_bytes: int) -> None:
        self.sinks = {FRAME_STDOUT[0]: _CappedSink(stdout_sink, cap_bytes),
                      FRAME_STDERR[0]: _CappedSink(stderr_sink, cap_bytes)}
        self.header = bytearray()
        self.kind: int | None = None   # type of the frame whose payload is being read
        self.remaining = 0             # payload bytes still to come
        self.payload = bytearray()     # buffered payload of an r, p or x frame
        self.result: dict[str, Any] | None = None
        self.probe: dict[str, Any] | None = None
        self.helper_errors: list[str] = []
        self.final: str | None = None  # "result" or "probe report" once seen
        self.error: str | None = None

    def feed(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and self.error is None:
            if self.kind is None:
                need = HEADER_SIZE - len(self.header)
                self.header += view[:need]
                view = view[need:]
                if len(self.header) == HEADER_SIZE:
                    self._begin_frame()
            else:
                part = view[:self.remaining]
                view = view[len(part):]
                self.remaining -= len(part)
                sink = self.sinks.get(self.kind)
                if sink is not None:
                    sink.write(part)
                else:
                    self.payload += part
                if self.remaining == 0:
                    self._end_frame()

    def _begin_frame(self) -> None:
        kind, length = self.header[0], int.from_bytes(self.header[1:], "big")
        self.header.clear()
        if self.final is not None:
            self.error = f"frame {chr(kind)!r} after the {self.final}"
            return
        if bytes([kind]) not in FRAME_TYPES:
            self.error = f"unknown frame type 0x{kind:02x}"
            return
        limit = MAX_CHUNK if kind in self.sinks else MAX_META_PAYLOAD
        if length > limit:
            self.error = f"frame {chr(kind)!r} of {length} bytes exceeds the limit of {limit}"
            return
        self.kind, self.remaining = kind, length
        if length == 0:
            self._end_frame()

    def _end_frame(self) -> None:
        kind, payload = self.kind, bytes(self.payload)
        self.kind = None
        self.payload.clear()
        try:
            if kind == FRAME_ERROR[0]:
                self.helper_errors.append(payload.decode("utf-8", errors="replace"))
            elif kind == FRAME_RESULT[0]:
                self.final = "result"
                result = parse_result(payload)
                self._check_counts(result)
                self.result = result
            elif kind == FRAME_PROBE[0]:
                self.final = "probe report"
                self.probe = parse_probe(payload)
        except ProtocolError as exc:
            self.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a frame fails its exec (tampered), never the run
            self.error = f"frame {chr(kind or 0)!r} could not be read: {type(exc).__name__}: " \
                         f"{untrusted.clip(str(exc))}"

    def _check_counts(self, result: dict[str, Any]) -> None:
        """The helper relays min(total, cap) bytes per stream: the frames must agree."""
        cap = result["cap_bytes"]
        for name, kind in (("stdout", FRAME_STDOUT[0]), ("stderr", FRAME_STDERR[0])):
            total = result[f"{name}_bytes"]
            received = self.sinks[kind].received
            if received != min(total, cap):
                raise ProtocolError(f"{name} frames carried {received} bytes but the result "
                                    f"reports {total} (cap {cap})")
            if result[f"{name}_truncated"] != (total > cap):
                raise ProtocolError(f"result {name}_truncated disagrees with {total} bytes "
                                    f"against a cap of {cap}")

    def finish(self) -> DecodedExec:
        if self.error is None:
            if self.kind is not None or self.header:
                self.error = "stream ended in the middle of a frame"
            elif self.final is None:
                self.error = "stream ended without a result or probe report"
        out, err = self.sinks[FRAME_STDOUT[0]], self.sinks[FRAME_STDERR[0]]
        return DecodedExec(result=self.result, probe=self.probe,
                           helper_errors=list(self.helper_errors),
                           stdout_written=out.written, stderr_written=err.written,
                           stdout_sha256=out.sha256.hexdigest(),
                           stderr_sha256=err.sha256.hexdigest(),
                           protocol_error=self.error)


def decode_exec_stream(chunks: Iterable[bytes], stdout_sink: IO[bytes], stderr_sink: IO[bytes],
                       cap_bytes: int) -> DecodedExec:
    """Decode one helper stream, writing at most `cap_bytes` of tool output to each sink.

    The whole iterable is consumed even after a protocol error (the rest is discarded), so
    the exec behind it can finish. Sinks must write everything they are given (buffered
    files, BytesIO).
    """
    if cap_bytes < 0:
        raise ValueError(f"cap_bytes must be >= 0, not {cap_bytes}")
    decoder = _Decoder(stdout_sink, stderr_sink, cap_bytes)
    for chunk in chunks:
        decoder.feed(chunk)
    return decoder.finish()


# -- the resident executor's envelope (`sandbench-exec serve`) -------------------------------

REQUEST: Final = b"q"
ENVELOPE_CHUNK: Final = b"c"
ENVELOPE_END: Final = b"z"
ENVELOPE_ERROR: Final = b"x"
MAX_REQUEST: Final = 1 << 20
"""Largest request payload `serve` accepts (its REQUEST_MAX)."""


def encode_request(args: list[str]) -> bytes:
    """One request for `serve`: the runner's arguments (`run ...` or `probe ...`), each
    ended by NUL."""
    if not args or args[0] not in ("run", "probe"):
        raise ValueError(f"a resident request runs `run` or `probe`, not {args[:1]}")
    payload = b"".join(a.encode("utf-8") + b"\0" for a in args)
    if any("\0" in a for a in args) or len(payload) > MAX_REQUEST:
        raise ValueError("a request's arguments hold no NUL and fit in 1 MiB")
    return REQUEST + len(payload).to_bytes(4, "big") + payload


class Envelope:
    """PID 1's answer to one request: `c` frames carrying the runner's own frame stream,
    then `z` ("exit N" or "signal N"). `feed` returns the runner bytes a chunk held; once the
    end is seen `end` is set, and anything out of step sets `error` (the channel can then no
    longer be trusted, and the caller must close it)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.end: str | None = None
        self.error: str | None = None
        self.serve_errors: list[str] = []

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        inner = bytearray()
        while self.end is None and self.error is None and len(self._buffer) >= HEADER_SIZE:
            kind = bytes(self._buffer[:1])
            length = int.from_bytes(self._buffer[1:HEADER_SIZE], "big")
            if kind not in (ENVELOPE_CHUNK, ENVELOPE_END, ENVELOPE_ERROR) or length > MAX_CHUNK:
                self.error = f"resident channel out of step: frame {kind!r} of {length} bytes"
                break
            if len(self._buffer) < HEADER_SIZE + length:
                break
            payload = bytes(self._buffer[HEADER_SIZE:HEADER_SIZE + length])
            del self._buffer[:HEADER_SIZE + length]
            if kind == ENVELOPE_CHUNK:
                inner += payload
            elif kind == ENVELOPE_ERROR:
                self.serve_errors.append(payload.decode("utf-8", "replace"))
            else:
                self.end = payload.decode("ascii", "replace")
        if self.end is not None and self._buffer and self.error is None:
            self.error = f"resident channel out of step: {len(self._buffer)} bytes after the end"
        return bytes(inner)

    def exit_code(self) -> int | None:
        """The runner's exit status as docker exec reports one (128 + N for signal N)."""
        how, _, number = (self.end or "").partition(" ")
        if not number.isdigit() or how not in ("exit", "signal"):
            return None
        return int(number) + (128 if how == "signal" else 0)
