"""`sandbench-exec serve`, the resident executor, run as the PID 1 of a pid namespace of its
own (unshare, as root) and spoken to on its stdin and stdout exactly as the orchestrator
does over the engine's attach stream: a request frame in, the envelope out. No Docker; the
real containers are tests/integration and tests/security."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.sandbox import execproto
from orchestrator.sandbox.execproto import Envelope, decode_exec_stream, encode_request

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                                reason="needs unshare as root")
NOBODY = 65534


@dataclass
class Answer:
    envelope: Envelope
    decoded: execproto.DecodedExec
    stdout: bytes

    @property
    def result(self) -> dict:
        assert self.decoded.protocol_error is None, self.decoded.protocol_error
        assert self.decoded.result is not None
        return self.decoded.result


class Served:
    """A serving helper as PID 1, and the orchestrator's side of its channel."""

    def __init__(self, helper_path: Path, env: dict[str, str] | None = None,
                 as_uid: int | None = None) -> None:
        """PID 1 as root (the executor, which starts each tool `--as` another uid), or as
        `as_uid` (helper and tool one uid: the serving mechanics alone)."""
        drop = [] if as_uid is None else ["setpriv", "--reuid", str(as_uid), "--regid",
                                          str(as_uid), "--clear-groups"]
        self.proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", *drop,
                                      str(helper_path), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def frame(self) -> tuple[bytes, bytes]:
        assert self.proc.stdout is not None
        header = self.proc.stdout.read(5)
        assert len(header) == 5, f"the channel ended: {header!r}"
        return header[:1], self.proc.stdout.read(struct.unpack(">I", header[1:])[0])

    def ask(self, *args: str) -> Answer:
        """One request; the envelope read to its end, the inner stream decoded."""
        self.send(encode_request(list(args)))
        envelope, inner = Envelope(), bytearray()
        while envelope.end is None:
            kind, payload = self.frame()
            inner += envelope.feed(kind + len(payload).to_bytes(4, "big") + payload)
            assert envelope.error is None, envelope.error
        out = io.BytesIO()
        decoded = decode_exec_stream([bytes(inner)], out, io.BytesIO(), 1 << 20)
        return Answer(envelope, decoded, out.getvalue())

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *_: object) -> None:
        """Whatever the test left: PID 1 killed if it still runs, and waited for."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> int:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        return self.proc.wait(timeout=10)


@pytest.fixture
def served(helper: Path) -> Iterator[Served]:
    with Served(helper, as_uid=NOBODY) as s:
        yield s


def test_a_request_is_answered_with_the_frames_run_gives_then_its_exit(served: Served) -> None:
    answer = served.ask("run", "--sweep", "--", "sh", "-c", "echo hello; echo oops >&2; exit 3")
    assert answer.stdout == b"hello\n"
    assert answer.result["exit_code"] == 3 and answer.result["stray_swept"] == 0
    assert answer.envelope.end == "exit 0" and answer.envelope.exit_code() == 0


def test_requests_in_a_row_share_one_pid_1(served: Served) -> None:
    for i in range(20):
        answer = served.ask("run", "--sweep", "--", "sh", "-c", f"echo {i}; echo $PPID")
        number, parent = answer.stdout.split()
        assert number == str(i).encode()
        assert int(parent) > 1  # the runner, a child of PID 1, is the tool's parent
    assert served.close() == 0  # the channel closed: serve ends cleanly


def test_a_runner_the_tool_kills_ends_its_answer_and_the_next_request_sweeps(
        served: Served, tmp_path: Path) -> None:
    """The tool SIGKILLs its runner after leaving a daemon: the answer still ends (the
    envelope is PID 1's), with no result, and the next request's sweep kills the daemon."""
    answer = served.ask("run", "--", "sh", "-c",
                        "(setsid sleep 1000 &); sleep 0.2; kill -9 $PPID; sleep 5")
    assert answer.envelope.end == "signal 9" and answer.envelope.exit_code() == 137
    assert answer.decoded.result is None
    # PID 1 reaps the swept daemon while the next request still runs (as `idle` would):
    # the tool of that request sees no zombie.
    nxt = served.ask("run", "--sweep", "--", "sh", "-c",
                     "sleep 0.3; grep -l '^State:.*Z' /proc/[0-9]*/status; true")
    assert nxt.result["stray_swept"] >= 1 and nxt.result["exit_code"] == 0
    assert nxt.stdout == b"", nxt.stdout
    assert served.ask("run", "--sweep", "--", "true").result["stray_swept"] == 0


def test_the_executor_refuses_a_command_without_the_tools_ids(helper: Path) -> None:
    """As root, PID 1 is the executor: a request without --as would run the tool as uid 0
    with the executor's capabilities, and is refused with a result-less answer."""
    root = Served(helper)
    try:
        for request in (["run", "--", "id", "-u"], ["probe"]):
            answer = root.ask(*request)
            assert answer.envelope.exit_code() == 125 and answer.stdout == b""
            assert any("refused" in e and "--as UID:GID" in e
                       for e in answer.decoded.helper_errors), answer.decoded.helper_errors
    finally:
        root.close()


def test_probe_runs_through_the_channel(served: Served) -> None:
    answer = served.ask("probe")
    assert answer.decoded.protocol_error is None and answer.decoded.probe is not None
    assert set(answer.decoded.probe["pid1_fds"]) == {"stdin_write", "stdin_read",
                                                     "stdout_write", "stdout_read"}


@pytest.mark.parametrize(("request_bytes", "why"), [
    (b"Q\0\0\0\4run\0", "a malformed request"),
    (b"q\0\0\0\3run", "must each end with NUL"),
    (encode_request(["run", "--", "true"]).replace(b"run", b"idl"), "runs `run` or `probe`"),
    (b"q\xff\xff\xff\xff", "a malformed request"),
])
def test_a_malformed_request_closes_the_channel_with_an_error(
        served: Served, request_bytes: bytes, why: str) -> None:
    served.send(request_bytes)
    kind, text = served.frame()
    assert kind == b"x" and why.encode() in text, text
    assert served.proc.wait(timeout=10) == 125


def test_serve_refuses_unless_it_is_pid_1(helper: Path) -> None:
    proc = subprocess.run([str(helper), "serve"], input=b"", capture_output=True, timeout=10)
    assert proc.returncode == 125
    assert b"runs only as the PID 1" in proc.stdout


def test_the_channel_costs_little_per_request(served: Served) -> None:
    """Not a speed target (scripts/bench measures that): a request that takes seconds would
    mean the envelope waits on something it should not."""
    began = time.monotonic()
    for _ in range(10):
        served.ask("run", "--", "true")
    assert time.monotonic() - began < 30


def test_encode_request_refuses_what_serve_would() -> None:
    with pytest.raises(ValueError):
        encode_request(["idle"])
    with pytest.raises(ValueError):
        encode_request(["run", "--", "a\0b"])


def test_an_envelope_out_of_step_is_named() -> None:
    env = Envelope()
    assert env.feed(b"c\0\0\0\2ab") == b"ab"
    env.feed(b"?\0\0\0\0")
    assert env.error is not None and "out of step" in env.error
    env = Envelope()
    env.feed(b"z\0\0\0\6exit 0" + b"c")
    assert env.end == "exit 0" and env.error is not None
