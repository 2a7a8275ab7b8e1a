"""MCP arms: one session with the arm's MCP server per exec, and the records derived from it.

An arm with `protocol = "mcp"` names its server's argv, the MCP protocol version it speaks and
per task kind one `tools/call` (tool and argument template). Inside the sandbox one exec runs
`sandbench-mcp-client` (images/mcp/, the official SDK's models pinned with hashes): it starts
the server, does `initialize` / `notifications/initialized`, sends the calls in order on that
one server and stops it. The exec is an ordinary one (guards, timing helper, sweep, capped
streams, the record written here on the host), so a session is exactly as contained as any
command; its stdout is the client's transcript and its stderr the server's own.

Per task the session sends the call `reps + 1` times: REP 0 is the first call on a fresh
server (cold), the rest are repeats on the same server (warm). The session's own cell
(`TASK/session/`) keeps the exec's record, the verbatim transcript and the server's stderr;
each REP cell gets a record derived here from that transcript: wall time from the request
leaving the client to its answer arriving (stamped with the container's monotonic clock by
the client, never taken from anything the server says), stdout the call's payload (the text
content items of its result, concatenated in the order returned), and one outcome. `initialize`
is the set-up cost: the `_setup` cell is a session of its own (initialize and the arm's
optional set-up calls), timed from the server's start to the last answer.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_bytes
from orchestrator.kinds import PLACEHOLDER
from orchestrator.isolation.limits import MIB
from orchestrator.run.transcripts import (MCP_OUTCOMES, RECORD_NAME, ExecRecord, StreamInfo,
                                      write_record)
from orchestrator.untrusted import decode as untrusted
from orchestrator.untrusted.errors import HostileInput

PROTOCOL = "mcp"
CLIENT = "/usr/local/bin/sandbench-mcp-client"
SESSION = "session"  # the session exec's own cell, inside the task's (or _setup's) folder
# What the client writes is bounded by construction, in bytes written (each line's envelope
# included), whatever the server sends: every request of its own and every answer to one
# whole, an answer in its shorter form (JSON string or base64: at most 4/3 of the frame, and
# each at most the frame cap, so a session's answers take at most 4/3 of ANSWER_BUDGET);
# anything else (notifications, the server's requests, our replies) verbatim up to
# VERBATIM_CAP, then as size and sha256 up to DIGEST_CAP, and at most CHATTER_FRAMES frames
# of it. A frame past those ends the session as mcp-flood, counted in a `dropped` line and
# never kept. With result details clipped (DETAIL_BYTES each) the transcript stays under
# transcript_bound(calls), well below the exec's 64 MiB stream cap (EXEC_STREAM_CAP).
VERBATIM_CAP = 12 * MIB
DIGEST_CAP = 4 * MIB  # about 30,000 digest lines
CHATTER_FRAMES = 32_768  # honest servers send a few progress or log notifications per call
FRAME_CAP = 8 * MIB  # one JSON-RPC line larger than this is a malformed frame
ANSWER_BUDGET = 24 * MIB  # shared by the answers of one session (the frame cap shrinks)
LINE_BYTES = 256  # the envelope of a line (stamp, kind, size, digest), rounded up
DETAIL_BYTES = 6 * 1000 + LINE_BYTES  # a result: 1,000 characters, each at most \uXXXX
EXEC_STREAM_CAP = 64 * MIB  # sandbox.exec's cap_bytes, the session exec's stdout
STOP_MARGIN_S = 30.0  # interpreter start, the server's stop, the transcript's last lines

@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: dict[str, Any]

    def render(self, values: dict[str, str]) -> ToolCall:
        """The call with every {placeholder} in its string arguments replaced: the values
        go into JSON strings, so a quote or brace in a ticket stays data."""
        return ToolCall(self.tool, _fill(self.arguments, values))

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments}


@dataclass(frozen=True)
class Server:
    argv: tuple[str, ...]
    protocol_version: str
    initialize_timeout_s: float
    setup_calls: tuple[ToolCall, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"server": list(self.argv), "protocol_version": self.protocol_version,
                "initialize_timeout_s": self.initialize_timeout_s,
                "setup_calls": [c.to_json() for c in self.setup_calls]}


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def placeholders(value: Any) -> set[str]:
    """Every {placeholder} named in the string values of an argument template."""
    if isinstance(value, str):
        return set(PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    return set()


def session_argv(server: Server, calls: list[ToolCall], timeout_s: float,
                 workdir: str) -> list[str]:
    """The one exec of a session: the client and its plan (no shell, one JSON argument)."""
    plan = {"server": list(server.argv), "cwd": workdir,
            "protocol_version": server.protocol_version,
            "initialize_timeout_s": server.initialize_timeout_s, "timeout_s": timeout_s,
            "frame_cap": frame_cap(len(calls)), "verbatim_cap": VERBATIM_CAP,
            "digest_cap": DIGEST_CAP, "chatter_frames": CHATTER_FRAMES,
            "calls": [{"name": c.tool, "arguments": c.arguments} for c in calls]}
    return [CLIENT, "--plan", json.dumps(plan, ensure_ascii=False, sort_keys=True)]


def frame_cap(calls: int) -> int:
    """The largest frame a session of `calls` tool calls (and initialize) may receive."""
    return min(FRAME_CAP, ANSWER_BUDGET // (calls + 1))


def transcript_bound(calls: int, plan_bytes: int) -> int:
    """The most a session of `calls` tool calls (and initialize) can write on stdout, its
    plan `plan_bytes` long: the chatter, the answers, our requests (their arguments are in
    the plan once each, kept in the shorter form), one result per request, and the start
    (which names the server's argv, from the plan), server-exit, dropped and end lines."""
    answers = (calls + 1) * (frame_cap(calls) * 4 // 3 + LINE_BYTES)
    requests = 2 * plan_bytes + (calls + 1) * LINE_BYTES
    return (VERBATIM_CAP + DIGEST_CAP + answers + requests + (calls + 1) * DETAIL_BYTES
            + 2 * plan_bytes + 4 * LINE_BYTES)


def session_timeout_s(server: Server, calls: int, timeout_s: float) -> float:
    return server.initialize_timeout_s + calls * timeout_s + STOP_MARGIN_S


# -- the transcript -----------------------------------------------------------------------

@dataclass(frozen=True)
class CallResult:
    call: int | str  # "initialize" or the plan's call index
    sent: int | None
    answered: int | None
    outcome: str
    detail: str


@dataclass
class Session:
    """What the client's transcript says; `complete` only with its final `end` line."""

    start: dict[str, Any] | None = None
    spawned: int | None = None
    results: dict[int | str, CallResult] = dataclasses.field(default_factory=dict)
    answers: dict[int, bytes] = dataclasses.field(default_factory=dict)  # request id -> frame
    server_exit: dict[str, Any] | None = None
    complete: bool = False
    problem: str | None = None  # why the transcript could not be read to its end
    # A frame the client passed on but the host refuses (nesting, a number's length): the
    # call it came in for fails as mcp-malformed-frame, whatever the client made of it.
    refused: str | None = None
    first_t: int | None = None
    last_t: int | None = None
    # What the client counted and did not keep once the server's frames passed its budgets
    # (it then ended the session as mcp-flood): {"frames": N, "bytes": B}.
    dropped: dict[str, int] | None = None


def read_transcript(data: bytes) -> Session:
    """The client's JSON lines, each checked for shape; reading stops at the first line that
    is not one of its own (the session then counts as tampered where it gave no result).
    Every line and every frame in it is decoded within untrusted.decode's bounds; a frame
    the host refuses fails the call it came in for (the client reads one call at a time, so
    every frame between two results belongs to the later one)."""
    session = Session()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        session.problem = "the transcript ends inside a line"
        lines.pop()
    for number, raw in enumerate(lines, 1):
        try:
            entry = untrusted.loads(raw, what=f"transcript line {number}")
        except HostileInput as exc:
            session.problem = f"transcript line {number} is not JSON" if exc.kind in (
                "not-json", "not-utf8") else f"transcript line {number}: {exc.message}"
            break
        t = entry.get("t") if isinstance(entry, dict) else None
        if not isinstance(t, int) or isinstance(t, bool) or "kind" not in entry:
            session.problem = f"transcript line {number} has no kind and integer t"
            break
        session.first_t = t if session.first_t is None else session.first_t
        session.last_t = t
        kind = entry["kind"]
        if kind == "start":
            session.start = entry
        elif kind == "recv" and isinstance(entry.get("frame"), str):
            _note_answer(session, entry["frame"])
        elif kind == "recv" and isinstance(entry.get("frame_b64"), str):
            _note_answer(session, _unbase64(entry["frame_b64"]))
        elif kind == "dropped":
            session.dropped = {k: entry[k] for k in ("frames", "bytes")
                               if type(entry.get(k)) is int}
        elif kind == "result":
            call = entry.get("call")
            outcome, detail = str(entry.get("outcome")), str(entry.get("detail") or "")
            if session.refused is not None:
                outcome, detail, session.refused = "mcp-malformed-frame", session.refused, None
            session.results[call] = CallResult(call, entry.get("sent"), entry.get("answered"),
                                               outcome, detail)
        elif kind == "server-exit":
            session.server_exit = {"exit_code": entry.get("exit_code"),
                                   "signal": entry.get("signal")}
        elif kind == "end":
            session.spawned = entry.get("spawned")
            session.complete = True
    return session


def _unbase64(text: str) -> bytes:
    """An answer the client kept in base64 (its shorter form, or not UTF-8); b"" when the
    field is not base64, which leaves the call without a payload."""
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return b""


def _note_answer(session: Session, frame: str | bytes) -> None:
    """Responses by request id: the client numbers initialize 0 and the calls from 1. A frame
    that is not JSON the client has already failed; one past the host's bounds is refused
    here, for the call it came in for."""
    try:
        message = untrusted.loads(frame, what="a frame from the server")
    except HostileInput as exc:
        if exc.kind not in ("not-json", "not-utf8") and session.refused is None:
            session.refused = f"the host refused {exc.message} ({exc.kind})"
        return
    if isinstance(message, dict) and "method" not in message and isinstance(
            message.get("id"), int) and "result" in message:
        session.answers[message["id"]] = frame.encode() if isinstance(frame, str) else frame


def payload(frame: bytes | None) -> bytes:
    """A tools/call result as the model would see it: its text content items, concatenated
    in the order returned (other content types carry no text)."""
    if frame is None:
        return b""
    message = untrusted.loads(frame, what="a frame from the server")
    result = message.get("result") if isinstance(message, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return b""
    return "".join(item["text"] for item in content if isinstance(item, dict)
                   and item.get("type") == "text" and isinstance(item.get("text"), str)
                   ).encode("utf-8", "surrogatepass")


# -- records derived from a session ---------------------------------------------------------

# Exec outcomes that leave every call without an answer of its own.
SESSION_FAILURES = ("timeout", "oom", "signal", "spawn-error", "tampered", "sandbox-unavailable",
                    "sandbox-died", "nonzero-exit")


def call_outcome(session_record: ExecRecord, session: Session, call: int | str
                 ) -> tuple[str, str]:
    """One call's outcome: its own result when the transcript has one, else why the session
    gave none: the exec's outcome; mcp-flood when the transcript was cut at the stream cap
    (only the server's volume can push the client's bounded output there: the server cannot
    write into it); tampered when the exec ended well with the call's report missing."""
    result = session.results.get(call)
    if result is not None and (result.answered is not None or session_record.outcome == "ok"):
        return result.outcome, result.detail
    if session_record.outcome in SESSION_FAILURES:
        return session_record.outcome, f"the session's exec ended {session_record.outcome}"
    if session_record.stdout.truncated:
        return "mcp-flood", (f"the transcript was cut at the exec's stream cap "
                             f"({session_record.stdout.bytes_kept} bytes kept) before the "
                             f"result of call {call}")
    return "tampered", session.problem or f"the transcript has no result for call {call}"


def timing_impossible(session_record: ExecRecord, session: Session) -> bool:
    """The client's stamps must fit inside what the timing helper measured around it."""
    wall = session_record.timing.get("wall_ns")
    if wall is None or session.first_t is None or session.last_t is None:
        return False
    if session.last_t - session.first_t > wall:
        return True
    for r in session.results.values():
        if r.sent is not None and r.answered is not None and not (
                session.first_t <= r.sent <= r.answered <= session.last_t):
            return True
    return False


def derive(session_record: ExecRecord, session: Session, cell_dir: Path, *, call: int | str,
           first: int | str, argv: list[str], body: bytes, phase: str,
           rep: int | None) -> ExecRecord:
    """The record of one call (or of the set-up, from the server's start to `call`'s
    answer when `first` is "spawn"), written to `cell_dir` with its payload as stdout."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(cell_dir / "stdout", body)
    atomic_write_bytes(cell_dir / "stderr", b"")
    outcome, detail = call_outcome(session_record, session, call)
    result = session.results.get(call)
    if first == "spawn":
        # Set-up: the first failing step decides; its time runs from the server's start.
        steps: list[int | str] = ["initialize", *sorted(
            k for k in session.results if isinstance(k, int)
            and (not isinstance(call, int) or k <= call))]
        for step in steps:
            outcome, detail = call_outcome(session_record, session, step)
            if outcome != "ok":
                break
        began = session.spawned if session.spawned is not None else (
            session.start or {}).get("t")
    else:
        began = result.sent if result is not None else None
    ended = result.answered if result is not None else None
    wall = ended - began if began is not None and ended is not None else None
    flags = [f for f in session_record.flags if f != "impossible-timing"]
    if timing_impossible(session_record, session) or "impossible-timing" in session_record.flags:
        flags.insert(0, "impossible-timing")
    digest = hashlib.sha256(body).hexdigest()
    init = session.results.get("initialize")
    record = dataclasses.replace(
        session_record, argv=argv,
        timing={"wall_ns": wall, "user_us": None, "sys_us": None, "maxrss_kb": None,
                "host_bracket_ns": session_record.timing["host_bracket_ns"]},
        stdout=StreamInfo("stdout", len(body), len(body), False, digest),
        stderr=StreamInfo("stderr", 0, 0, False, hashlib.sha256(b"").hexdigest()),
        outcome=outcome if outcome == "ok" or outcome in MCP_OUTCOMES
        or outcome in SESSION_FAILURES
        else "tampered",
        flags=flags,
        mcp={"session": f"../{SESSION}" if phase == "task" else SESSION, "phase": phase,
             "call": call, "rep": rep, "detail": detail,
             "protocol_version": (session.start or {}).get("protocol_version"),
             "client": (session.start or {}).get("client_version"),
             "sdk": (session.start or {}).get("mcp"),
             "initialize_ns": (init.answered - init.sent) if init is not None and
             init.answered is not None and init.sent is not None else None,
             "session_wall_ns": session_record.timing.get("wall_ns"),
             "session_outcome": session_record.outcome,
             "server_exit": session.server_exit,
             "transcript_sha256": session_record.stdout.sha256,
             "server_stderr_sha256": session_record.stderr.sha256,
             **({"dropped": session.dropped} if session.dropped is not None else {})})
    write_record(cell_dir, record)
    return record


def _session(session_dir: Path) -> Session:
    """The session's transcript read; whatever reading it raises fails only this session's
    cells (as tampered, naming why), never the run."""
    try:
        return read_transcript((session_dir / "stdout").read_bytes())
    except Exception as exc:  # noqa: BLE001 - one session's bytes fail only its own cells
        return Session(problem=f"the transcript could not be read: {type(exc).__name__}: "
                               f"{untrusted.clip(str(exc))}")


def _body(session: Session, call: int) -> bytes:
    """Call `call`'s payload; an answer the host cannot read fails that call alone, as
    mcp-malformed-frame."""
    try:
        return payload(session.answers.get(call + 1))
    except Exception as exc:  # noqa: BLE001 - one frame fails only its own call
        old = session.results.get(call)
        session.results[call] = CallResult(
            call, old.sent if old else None, old.answered if old else None,
            "mcp-malformed-frame", f"the host could not read the answer: "
            f"{type(exc).__name__}: {untrusted.clip(str(exc))}")
        return b""


def task_records(session_record: ExecRecord, session_dir: Path, task_dir: Path,
                 call: ToolCall, reps: int) -> list[ExecRecord]:
    """REP 0..reps of one task from its session: the call sent reps + 1 times. The warm
    records are written first and REP 0 last."""
    session = _session(session_dir)
    argv = ["tools/call", call.tool, json.dumps(call.arguments, ensure_ascii=False,
                                                sort_keys=True)]
    records: dict[int, ExecRecord] = {}
    for rep in [*range(1, reps + 1), 0]:
        outcome, _ = call_outcome(session_record, session, rep)
        body = _body(session, rep) if outcome in ("ok", "mcp-tool-error") else b""
        records[rep] = derive(session_record, session, task_dir / str(rep), call=rep,
                              first=rep, argv=argv, body=body, phase="task", rep=rep)
    return [records[rep] for rep in range(reps + 1)]


def setup_record(session_record: ExecRecord, session_dir: Path, setup_dir: Path,
                 server: Server) -> ExecRecord:
    """The set-up cell: initialize and the set-up calls, from the server's start."""
    session = _session(session_dir)
    last: int | str = len(server.setup_calls) - 1 if server.setup_calls else "initialize"
    body = b"".join(_body(session, i) for i in range(len(server.setup_calls)))
    return derive(session_record, session, setup_dir, call=last, first="spawn",
                  argv=["initialize", *server.argv], body=body, phase="setup", rep=None)


def done(task_dir: Path, reps: int) -> bool:
    return all((task_dir / str(rep) / RECORD_NAME).is_file() for rep in range(reps + 1))


Exec = Callable[[list[str], Path, float], ExecRecord]
