"""MCP arms: the [mcp] spec and its bad input, and the records derived from a session's
transcript (outcomes, payload, timing bounds), all pure logic on hand-made transcripts."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest

from orchestrator import arms
from orchestrator.sandbox import mcp
from orchestrator.errors import InputError
from orchestrator.run.transcripts import ExecRecord, StreamInfo, read_record

MCP_ARM = """
description = "x"
image = "mcp"
parser = "rg"
protocol = "mcp"
[mcp]
server = ["srv", "--root", "/corpus"]
protocol_version = "2025-06-18"
[[mcp.setup_calls]]
tool = "build"
arguments = {}
[tasks.references]
tool = "refs"
arguments = { symbol = "{symbol}", ext = "{ext}", options = ["*.{ext}", 3, true] }
[not_attempted.impact]
reason = "quoted"
source = "its docs"
[not_attempted.locate]
reason = "quoted"
source = "its docs"
[not_attempted.e2e-retrieval]
reason = "quoted"
source = "its docs"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "arm.toml"
    path.write_text(text)
    return path


def test_an_mcp_arm_loads_with_its_server_calls_and_a_setup_cell(tmp_path: Path) -> None:
    arm = arms.load_arm(_write(tmp_path, MCP_ARM))
    assert arm.protocol == "mcp"
    assert arm.mcp is not None and arm.mcp.argv == ("srv", "--root", "/corpus")
    assert arm.mcp.setup_calls == (mcp.ToolCall("build", {}),)
    assert arm.setup is not None and arm.setup.argv == ("initialize", "srv", "--root", "/corpus")
    assert arm.tasks["references"][:2] == ("tools/call", "refs")
    data = arm.to_json()
    assert data["protocol"] == "mcp" and data["calls"]["references"]["tool"] == "refs"


def test_arguments_are_rendered_as_data_not_text() -> None:
    call = mcp.ToolCall("refs", {"q": "{ticket}", "n": [1, "{ext}"], "flag": True})
    ticket = 'a "quoted" ticket with {braces} and \\ backslash'
    rendered = call.render({"ticket": ticket, "ext": "cs"})
    assert rendered.arguments == {"q": ticket, "n": [1, "cs"], "flag": True}
    argv = mcp.session_argv(mcp.Server(("srv",), "2025-06-18", 10.0), [rendered], 5.0, "/corpus")
    assert argv[:2] == [mcp.CLIENT, "--plan"]
    plan = json.loads(argv[2])
    assert plan["calls"] == [{"name": "refs", "arguments": rendered.arguments}]
    assert plan["protocol_version"] == "2025-06-18" and plan["cwd"] == "/corpus"


@pytest.mark.parametrize(("old", "new", "key", "found"), [
    ('protocol = "mcp"\n', "", "mcp", "a [mcp] table"),
    ('[mcp]\nserver = ["srv", "--root", "/corpus"]\nprotocol_version = "2025-06-18"\n'
     '[[mcp.setup_calls]]\ntool = "build"\narguments = {}\n', "", "mcp", None),
    ('tool = "refs"\n', 'argv = ["refs"]\n', "tasks.references", ["arguments", "argv"]),
    ('symbol = "{symbol}"', 'symbol = "{seed}"', "tasks.references.arguments", "{seed}"),
    ('[[mcp.setup_calls]]\ntool = "build"\narguments = {}',
     '[[mcp.setup_calls]]\ntool = "build"\narguments = { p = "{symbol}" }',
     "mcp.setup_calls.0.arguments", "{symbol}"),
    ('[not_attempted.impact]', '[setup]\nargv = ["x"]\n[not_attempted.impact]', "setup",
     "a [setup] table"),
])
def test_bad_mcp_arms_are_refused_naming_the_key(tmp_path: Path, old: str, new: str, key: str,
                                                 found: object) -> None:
    assert old in MCP_ARM
    path = _write(tmp_path, MCP_ARM.replace(old, new, 1))
    with pytest.raises(InputError) as err:
        arms.load_arm(path)
    assert err.value.data["file"] == str(path)
    assert err.value.data["key"] == key
    assert err.value.data["found"] == found


def test_the_schema_refuses_a_bad_protocol_version(tmp_path: Path) -> None:
    path = _write(tmp_path, MCP_ARM.replace('"2025-06-18"', '"latest"'))
    with pytest.raises(InputError) as err:
        arms.load_arm(path)
    assert "mcp.protocol_version: expected an MCP protocol version (YYYY-MM-DD)" in \
        err.value.what


# -- transcripts and derived records ---------------------------------------------------------

def _line(**kw: object) -> bytes:
    return json.dumps(kw).encode() + b"\n"


def _answer(request_id: int, *texts: str, extra: dict | None = None) -> str:
    content = [{"type": "text", "text": t} for t in texts]
    content.insert(1, {"type": "image", "data": "AAAA", "mimeType": "image/png"})
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "result": {"content": content, **(extra or {})}})


def _transcript(calls: list[tuple[str, str | None]], end: bool = True) -> bytes:
    """start at t=1000, spawn 1000, initialize 1100-1300, call k sent at 2000 + 1000k and
    answered 400 ns later with (outcome, frame)."""
    out = _line(t=1000, kind="start", client_version="1", mcp="1.30.0",
                protocol_version="2025-06-18")
    out += _line(t=1300, kind="recv", frame=json.dumps(
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18"}}))
    out += _line(t=1301, kind="result", call="initialize", sent=1100, answered=1300,
                 outcome="ok", detail="")
    for k, (outcome, frame) in enumerate(calls):
        sent = 2000 + 1000 * k
        if frame is not None:
            out += _line(t=sent + 400, kind="recv", frame=frame)
        out += _line(t=sent + 401, kind="result", call=k, sent=sent,
                     answered=sent + 400 if frame is not None else None, outcome=outcome,
                     detail="" if outcome == "ok" else f"{outcome} detail")
    if end:
        out += _line(t=9000, kind="server-exit", exit_code=0, signal=None)
        out += _line(t=9001, kind="end", spawned=1000, elided=0)
    return out


def _session_record(outcome: str = "ok", wall_ns: int = 100_000) -> ExecRecord:
    stream = StreamInfo("stdout", 1, 1, False, "0" * 64)
    return ExecRecord(
        run_id="run", arm="peer", argv=[mcp.CLIENT, "--plan", "{}"], env={}, workdir="/corpus",
        user="1:1", image_id="sha256:" + "1" * 64, container_id="c", limits={
            "memory_bytes": 1, "pids": 1, "cpus": 1.0, "tmp_bytes": 1, "timeout_s": 1.0,
            "grace_s": 1.0, "cap_bytes": 1}, started_at="now",
        timing={"wall_ns": wall_ns, "user_us": 5, "sys_us": 5, "maxrss_kb": 5,
                "host_bracket_ns": wall_ns * 2},
        exit={"exit_code": 0, "signal": None, "timed_out": False, "host_timed_out": False,
              "oom_killed": False, "oom_kills": 0, "spawn_error": None, "stray_killed": 0,
              "stray_swept": 0},
        stdout=stream, stderr=StreamInfo("stderr", 0, 0, False, "0" * 64),
        helper={"version": "1", "exit_code": 0, "errors": [], "protocol_error": None,
                "stderr_tail": ""}, outcome=outcome, exec_path="resident")


def _derive(tmp_path: Path, transcript: bytes, record: ExecRecord, reps: int = 2
            ) -> list[ExecRecord]:
    session = tmp_path / "task" / mcp.SESSION
    session.mkdir(parents=True)
    (session / "stdout").write_bytes(transcript)
    call = mcp.ToolCall("refs", {"symbol": "Money"})
    return mcp.task_records(record, session, tmp_path / "task", call, reps)


def test_each_rep_gets_its_call_time_and_payload(tmp_path: Path) -> None:
    frames = [("ok", _answer(k + 1, f"a.cs:{k + 1}:x\n", "b.cs:2:y\n")) for k in range(3)]
    records = _derive(tmp_path, _transcript(frames), _session_record())
    assert [r.outcome for r in records] == ["ok", "ok", "ok"]
    assert [r.timing["wall_ns"] for r in records] == [400, 400, 400]
    assert records[0].timing["user_us"] is None  # per call there is no CPU figure
    cold = tmp_path / "task" / "0"
    assert (cold / "stdout").read_bytes() == b"a.cs:1:x\nb.cs:2:y\n"
    assert (cold / "stderr").read_bytes() == b""
    stored = read_record(cold / "record.json")
    assert stored.mcp is not None and stored.mcp["initialize_ns"] == 200
    assert stored.mcp["rep"] == 0 and stored.mcp["session"] == "../session"
    assert stored.argv == ["tools/call", "refs", '{"symbol": "Money"}']
    assert stored.stdout.bytes_total == len(b"a.cs:1:x\nb.cs:2:y\n")


def test_call_failures_keep_their_own_outcome(tmp_path: Path) -> None:
    error = json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}})
    frames = [("ok", _answer(1, "x\n")), ("mcp-error-response", error),
              ("mcp-call-timeout", None)]
    records = _derive(tmp_path, _transcript(frames), _session_record())
    assert [r.outcome for r in records] == ["ok", "mcp-error-response", "mcp-call-timeout"]
    assert records[1].stdout.bytes_total == 0
    assert records[2].timing["wall_ns"] is None
    assert records[1].mcp is not None and records[1].mcp["detail"] == "mcp-error-response detail"


def test_a_killed_client_leaves_answered_calls_and_fails_the_rest(tmp_path: Path) -> None:
    transcript = _transcript([("ok", _answer(1, "x\n"))], end=False) + b'{"t": 5, "kin'
    records = _derive(tmp_path, transcript, _session_record("signal"))
    assert [r.outcome for r in records] == ["ok", "signal", "signal"]


def test_a_missing_result_in_a_clean_exit_is_tampered(tmp_path: Path) -> None:
    transcript = _transcript([("ok", _answer(1, "x\n"))], end=False)
    records = _derive(tmp_path, transcript, _session_record("ok"))
    assert [r.outcome for r in records] == ["ok", "tampered", "tampered"]


def test_stamps_outside_the_helpers_wall_time_are_flagged(tmp_path: Path) -> None:
    frames = [("ok", _answer(k + 1, "x\n")) for k in range(3)]
    records = _derive(tmp_path, _transcript(frames), _session_record(wall_ns=5000))
    assert all("impossible-timing" in r.flags for r in records)
    records = _derive(tmp_path / "again", _transcript(frames), _session_record(wall_ns=10_000))
    assert not any("impossible-timing" in r.flags for r in records)


def test_an_unknown_outcome_in_the_transcript_is_tampered(tmp_path: Path) -> None:
    frames = [("great", _answer(1, "x\n")), ("ok", _answer(2, "x\n")),
              ("ok", _answer(3, "x\n"))]
    records = _derive(tmp_path, _transcript(frames), _session_record())
    assert records[0].outcome == "tampered"


def test_the_setup_record_runs_from_spawn_to_the_last_setup_answer(tmp_path: Path) -> None:
    session = tmp_path / "_setup" / mcp.SESSION
    session.mkdir(parents=True)
    (session / "stdout").write_bytes(_transcript([("ok", _answer(1, "indexed 44 files\n"))]))
    server = mcp.Server(("srv",), "2025-06-18", 10.0, (mcp.ToolCall("build", {}),))
    record = mcp.setup_record(_session_record(), session, tmp_path / "_setup", server)
    assert record.outcome == "ok" and record.timing["wall_ns"] == 2400 - 1000
    assert (tmp_path / "_setup" / "stdout").read_bytes() == b"indexed 44 files\n"
    plain = mcp.Server(("srv",), "2025-06-18", 10.0)
    record = mcp.setup_record(_session_record(), session, tmp_path / "_setup", plain)
    assert record.timing["wall_ns"] == 300 and record.argv == ["initialize", "srv"]


def test_a_failed_initialize_fails_the_setup(tmp_path: Path) -> None:
    session = tmp_path / "_setup" / mcp.SESSION
    session.mkdir(parents=True)
    transcript = _line(t=1, kind="start") + _line(
        t=2, kind="result", call="initialize", sent=1, answered=None,
        outcome="mcp-server-exited", detail="exited 3") + _line(t=3, kind="end", spawned=1)
    (session / "stdout").write_bytes(transcript)
    record = mcp.setup_record(_session_record(), session, tmp_path / "_setup",
                              mcp.Server(("srv",), "2025-06-18", 10.0))
    assert record.outcome == "mcp-server-exited"
    assert record.mcp is not None and record.mcp["detail"] == "exited 3"


def test_payload_is_the_text_items_in_order() -> None:
    assert mcp.payload(_answer(1, "one ", "two").encode()) == b"one two"
    assert mcp.payload(None) == b""
    assert mcp.payload(json.dumps({"id": 1, "result": {"content": "x"}}).encode()) == b""


# -- floods: the transcript's bound and the verdicts it keeps -------------------------------

def _cut(record: ExecRecord) -> ExecRecord:
    """The session record of an exec whose stdout reached the stream cap."""
    return dataclasses.replace(record, stdout=StreamInfo("stdout", 70 << 20, 64 << 20, True,
                                                         "0" * 64))


def test_a_transcript_cut_at_the_stream_cap_fails_the_calls_it_lost_as_a_flood(
        tmp_path: Path) -> None:
    """The server cannot write into the client's stdout, so a cut is the server's volume:
    the calls the transcript lost are mcp-flood, never tampered; the ones before keep theirs."""
    transcript = _transcript([("ok", _answer(1, "x\n"))], end=False) + b'{"t": 5, "kin'
    records = _derive(tmp_path, transcript, _cut(_session_record("ok")))
    assert [r.outcome for r in records] == ["ok", "mcp-flood", "mcp-flood"]
    assert records[1].mcp is not None and "cut at the exec's stream cap" in \
        records[1].mcp["detail"]
    assert (tmp_path / "task" / "0" / "stdout").read_bytes() == b"x\n"


def test_a_flood_the_client_ended_keeps_its_verdict_and_its_counts(tmp_path: Path) -> None:
    detail = "the server sent more than the transcript keeps besides answers"
    out = _transcript([], end=False)
    out += _line(t=2500, kind="dropped", frames=1864, bytes=57790)
    out += _line(t=2501, kind="result", call=0, sent=2000, answered=None, outcome="mcp-flood",
                 detail=detail)
    for k in (1, 2):
        out += _line(t=2501 + k, kind="result", call=k, sent=None, answered=None,
                     outcome="mcp-flood", detail=f"not sent: the session had ended ({detail})")
    out += _line(t=9000, kind="server-exit", exit_code=None, signal=15)
    out += _line(t=9001, kind="end", spawned=1000, elided=0, unanswered=0)
    records = _derive(tmp_path, out, _session_record())
    assert [r.outcome for r in records] == ["mcp-flood"] * 3
    assert all(r.mcp is not None and r.mcp["dropped"] == {"frames": 1864, "bytes": 57790}
               for r in records)
    assert all(r.timing["wall_ns"] is None for r in records)
    stored = read_record(tmp_path / "task" / "1" / "record.json")  # the schema takes both
    assert stored.outcome == "mcp-flood"


def test_an_answer_kept_in_base64_is_the_calls_payload(tmp_path: Path) -> None:
    """The client keeps an answer in its shorter form: base64 when escaping would grow it."""
    frames = [("ok", _answer(k + 1, '"quoted" \\ text\n' * 50)) for k in range(3)]
    out = _transcript(frames)
    for k, (_, frame) in enumerate(frames):
        packed = base64.b64encode(frame.encode()).decode()
        out = out.replace(_line(t=2400 + 1000 * k, kind="recv", frame=frame),
                          _line(t=2400 + 1000 * k, kind="recv", frame_b64=packed))
    assert b"frame_b64" in out
    records = _derive(tmp_path, out, _session_record())
    assert [r.outcome for r in records] == ["ok", "ok", "ok"]
    assert (tmp_path / "task" / "0" / "stdout").read_bytes() == b'"quoted" \\ text\n' * 50


def test_the_transcripts_bound_stays_well_under_the_exec_stream_cap() -> None:
    """Whatever the server sends: the largest plan one argv takes (128 KiB), any number of
    calls a suite can ask of one session."""
    for calls in (1, 2, 5, 20, 200):
        bound = mcp.transcript_bound(calls, 128 << 10)
        assert bound <= mcp.EXEC_STREAM_CAP * 0.85, (calls, bound)
    argv = mcp.session_argv(mcp.Server(("srv",), "2025-06-18", 10.0),
                            [mcp.ToolCall("refs", {})] * 3, 5.0, "/corpus")
    plan = json.loads(argv[2])
    assert (plan["verbatim_cap"], plan["digest_cap"], plan["chatter_frames"]) == (
        mcp.VERBATIM_CAP, mcp.DIGEST_CAP, mcp.CHATTER_FRAMES)
    assert plan["frame_cap"] * 4 == mcp.ANSWER_BUDGET
