"""Hostile MCP servers (tests/security/images/hostile-mcp) in one real run beside rg (first)
and rg-late (last): each failure is contained in its own cells, classified with its own
outcome, and the run goes on; nothing the server says or does reaches a record the
orchestrator writes, and nothing of the session is lost."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator import parsers, report
from orchestrator.sandbox import mcp
from orchestrator.score import scorer
from orchestrator.run.transcripts import ExecRecord, read_record
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.security.conftest import (MCP_CALL_TIMEOUT_S, MCP_FLOOD_TIMEOUT_S, MCP_MODES, TASKS,
                                     World)

pytestmark = pytest.mark.integration


def _rep(run_dir: Path, mode: str, task: str, rep: int) -> ExecRecord:
    return read_record(run_dir / "cells" / f"h-mcp-{mode}" / task / str(rep) / "record.json")


def _session(run_dir: Path, mode: str, task: str) -> Path:
    return run_dir / "cells" / f"h-mcp-{mode}" / task / mcp.SESSION


def _transcript(run_dir: Path, mode: str, task: str) -> list[dict]:
    data = (_session(run_dir, mode, task) / "stdout").read_bytes()
    return [json.loads(line) for line in data.splitlines()]


EXPECTED = {  # REP 0 and REP 1 of every task
    "good": ("ok", "ok"),
    "exit-early": ("mcp-server-exited", "mcp-server-exited"),
    "version": ("mcp-version-mismatch", "mcp-version-mismatch"),
    "error": ("mcp-error-response", "mcp-error-response"),
    "malformed": ("mcp-malformed-frame", "mcp-malformed-frame"),
    "hang": ("mcp-call-timeout", "mcp-call-timeout"),
    "flood": ("ok", "ok"),
    "bigframe": ("mcp-malformed-frame", "mcp-malformed-frame"),
    "daemon": ("ok", "ok"),
    "forge": ("ok", "ok"),
    "network": ("mcp-tool-error", "mcp-tool-error"),
    "write": ("mcp-tool-error", "mcp-tool-error"),
    "deep": ("mcp-malformed-frame", "mcp-malformed-frame"),
    "deeper": ("mcp-malformed-frame", "mcp-malformed-frame"),
    "notify-flood": ("mcp-flood", "mcp-flood"),
    "request-flood": ("mcp-call-timeout", "mcp-call-timeout"),
}


@dataclass
class TimedRun:
    run_dir: Path
    seconds: float


@pytest.fixture(scope="session")
def mcp_flood_run(world: World) -> TimedRun:
    """The notification flood beside rg with the demo's call limit (120 s), timed: the
    setting in which the flood once pushed the transcript past the stream cap."""
    started = time.monotonic()
    run_dir = runner.run(world.settings, RunOptions("mcp-flood", jobs=2), [pool.one(world.engine)])
    return TimedRun(run_dir, time.monotonic() - started)


def test_every_session_failure_has_its_own_outcome_and_the_run_goes_on(mcp_run: Path) -> None:
    meta = json.loads((mcp_run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert set(EXPECTED) == set(MCP_MODES)
    for mode, (cold, warm) in EXPECTED.items():
        for task in TASKS:
            assert (_rep(mcp_run, mode, task, 0).outcome,
                    _rep(mcp_run, mode, task, 1).outcome) == (cold, warm), (mode, task)
            session = read_record(_session(mcp_run, mode, task) / "record.json")
            # The client itself always finishes: every failure is the server's, per call.
            assert session.outcome == "ok", (mode, task, session.helper)
            assert session.mcp is None
    for arm in ("rg", "rg-late"):
        for task in TASKS:
            for rep in (0, 1):
                record = read_record(mcp_run / "cells" / arm / task / str(rep) / "record.json")
                assert record.outcome == "ok" and not record.flags, (arm, task, rep)


def test_the_set_up_cell_names_why_initialize_failed(mcp_run: Path) -> None:
    setup = {mode: read_record(mcp_run / "cells" / f"h-mcp-{mode}" / "_setup" / "record.json")
             for mode in MCP_MODES}
    assert setup["exit-early"].outcome == "mcp-server-exited"
    assert "exited with code 3" in setup["exit-early"].mcp["detail"]
    assert setup["version"].outcome == "mcp-version-mismatch"
    assert "'1999-01-01'" in setup["version"].mcp["detail"]
    for mode in set(MCP_MODES) - {"exit-early", "version"}:
        assert setup[mode].outcome == "ok", mode
        assert setup[mode].timing["wall_ns"] > 0
    # The server's own words are in its stderr, kept apart from the transcript.
    stderr = (mcp_run / "cells" / "h-mcp-exit-early" / "_setup" / mcp.SESSION / "stderr")
    assert b"refusing to start (exit-early)" in stderr.read_bytes()


def test_a_well_behaved_server_is_graded_like_any_arm(mcp_run: Path) -> None:
    for task in TASKS:
        cold = mcp_run / "cells" / "h-mcp-good" / task / "0"
        parsed = parsers.get_parser("rg").parse((cold / "stdout").read_bytes(), b"", "references")
        rg = mcp_run / "cells" / "rg" / task / "0"
        rg_rows = parsers.get_parser("rg").parse((rg / "stdout").read_bytes(), b"", "references")
        assert {r.path for r in parsed.rows} >= {r.path for r in rg_rows.rows} - {""}
        record = _rep(mcp_run, "good", task, 0)
        assert record.mcp["rep"] == 0 and record.mcp["session_outcome"] == "ok"
        assert 0 < record.timing["wall_ns"] <= record.mcp["session_wall_ns"]
        lines = _transcript(mcp_run, "good", task)
        kinds = [line["kind"] for line in lines]
        assert kinds[0] == "start" and kinds[-1] == "end"
        # initialize, notifications/initialized, and the call twice (cold, warm): both ways.
        sent = [json.loads(line["frame"]) for line in lines if line["kind"] == "send"]
        assert [m.get("method") for m in sent] == ["initialize", "notifications/initialized",
                                                   "tools/call", "tools/call"]
        assert sent[0]["params"]["protocolVersion"] == "2025-06-18"
        stamps = [line["t"] for line in lines]
        assert stamps == sorted(stamps)


def test_a_hang_is_cut_at_the_call_limit_and_the_warm_call_is_never_sent(mcp_run: Path) -> None:
    cold = _rep(mcp_run, "hang", TASKS[0], 0)
    assert cold.timing["wall_ns"] is None  # no answer: no call time
    assert "within the limit" in cold.mcp["detail"]
    warm = _rep(mcp_run, "hang", TASKS[0], 1)
    assert warm.mcp["detail"].startswith("not sent: the session had ended")
    session = read_record(_session(mcp_run, "hang", TASKS[0]) / "record.json")
    assert session.timing["wall_ns"] >= MCP_CALL_TIMEOUT_S * 1_000_000_000


def test_a_flood_is_capped_in_the_transcript_and_the_answers_are_kept(mcp_run: Path) -> None:
    for task in TASKS:
        session = read_record(_session(mcp_run, "flood", task) / "record.json")
        assert not session.stdout.truncated
        assert session.stdout.bytes_kept < 64 << 20
        lines = _transcript(mcp_run, "flood", task)
        elided = [line for line in lines if line["kind"] == "recv" and line.get("elided")]
        assert elided and all(len(line["sha256"]) == 64 for line in elided)
        assert lines[-1]["kind"] == "end" and lines[-1]["elided"] == len(elided)
        # The answers came after 24,000 notifications and are whole: the same payload as
        # the well-behaved server's.
        good = (mcp_run / "cells" / "h-mcp-good" / task / "0" / "stdout").read_bytes()
        for rep in (0, 1):
            assert (mcp_run / "cells" / "h-mcp-flood" / task / str(rep) / "stdout"
                    ).read_bytes() == good


def test_a_frame_over_the_cap_is_refused_and_kept_as_its_digest(mcp_run: Path) -> None:
    record = _rep(mcp_run, "bigframe", TASKS[0], 0)
    assert "over the frame cap" in record.mcp["detail"]
    lines = _transcript(mcp_run, "bigframe", TASKS[0])
    (big,) = [line for line in lines if line["kind"] == "recv" and line.get("elided")]
    assert big["bytes"] > mcp.frame_cap(2) and len(big["sha256"]) == 64
    assert (_session(mcp_run, "bigframe", TASKS[0]) / "stdout").stat().st_size < 1 << 20


def test_a_daemon_forked_by_a_server_that_claims_to_be_done_is_killed(mcp_run: Path,
                                                                        world: World) -> None:
    sessions = [read_record(_session(mcp_run, "daemon", task) / "record.json")
                for task in TASKS]
    for record in sessions:
        # Killed when the client exited (the helper's subreaper), not left for the next exec.
        assert record.exit["stray_killed"] >= 1
        assert record.exit["stray_swept"] == 0
        assert "stray-processes" not in record.flags
    for task in TASKS:
        assert _rep(mcp_run, "daemon", task, 0).exit["stray_killed"] >= 1


def test_forged_timing_fields_and_transcript_lines_change_no_record(mcp_run: Path) -> None:
    for task in TASKS:
        for rep in (0, 1):
            record = _rep(mcp_run, "forge", task, rep)
            # The server sleeps 0.3 s before each answer and claims wall_ns 1 in its result.
            assert record.timing["wall_ns"] >= 300_000_000, (task, rep)
            assert "impossible-timing" not in record.flags
            assert record.outcome == "ok"
        lines = _transcript(mcp_run, "forge", task)
        results = [line for line in lines if line["kind"] == "result"]
        assert [r["call"] for r in results] == ["initialize", 0, 1]  # nothing injected
        assert all(r["sent"] > 1 for r in results)
        stderr = (_session(mcp_run, "forge", task) / "stderr").read_bytes()
        # The client is non-dumpable: its stdout (the transcript's pipe) does not open.
        assert b"/fd/1 for writing: PermissionError errno 13" in stderr
        assert b"/mem: PermissionError errno 13" in stderr
        # The forged record in its own /out is its own file; the orchestrator's is on the host.
        assert b"write /out/record.json: succeeded" in stderr
        assert b"write /out/../cells/record.json: " in stderr
        assert b"write /out/../cells/record.json: succeeded" not in stderr


def test_network_and_writes_outside_the_mounts_fail_in_their_cell(mcp_run: Path,
                                                                  world: World) -> None:
    net = (_session(mcp_run, "network", TASKS[0]) / "stderr").read_bytes()
    assert b"ConnectionRefusedError errno 111" in net
    assert not any(b"MCP-SERVER-WAS-HERE" in data for _, data in world.listener.arrived)
    payload = (mcp_run / "cells" / "h-mcp-network" / TASKS[0] / "0" / "stdout").read_bytes()
    assert b"errno 111" in payload  # the tool's own error, as the model would see it
    write = (_session(mcp_run, "write", TASKS[0]) / "stderr").read_bytes()
    for path in (b"/etc/sandbench-mcp", b"/usr/local/x", b"/corpus/../x", b"/x"):
        assert b"write " + path + b": OSError errno 30" in write, path


def test_the_scores_and_the_report_name_every_failure_kind(mcp_run: Path,
                                                            world: World) -> None:
    scores = scorer.score_run(mcp_run, world.settings.suites_dir / "mcp")
    for mode, (cold, _) in EXPECTED.items():
        failures = scores["summary"][f"h-mcp-{mode}"]["all"]["failures"]
        if cold == "ok":
            assert failures == {}, mode
        else:
            assert failures == {cold: len(TASKS)}, mode
    text = report.render_markdown(scores)
    for kind in {k for k, _ in EXPECTED.values()} - {"ok"}:
        assert kind in text


def test_a_frame_nested_past_the_hosts_bound_fails_its_call_not_the_run(mcp_run: Path) -> None:
    """The client takes the frame (its decoder runs near the top of its stack); the host
    refuses it before its own recursive decoder sees it, as that call's malformed frame."""
    for task in TASKS:
        session = read_record(_session(mcp_run, "deep", task) / "record.json")
        assert session.outcome == "ok"
        lines = _transcript(mcp_run, "deep", task)
        deep = [line for line in lines if line["kind"] == "recv" and '"structuredContent"'
                in line.get("frame", "")]
        assert len(deep) == 2 and all("[" * 900 in line["frame"] for line in deep)
        results = {line["call"]: line["outcome"] for line in lines if line["kind"] == "result"}
        assert results == {"initialize": "ok", 0: "ok", 1: "ok"}  # the client's own view
        for rep in (0, 1):
            record = _rep(mcp_run, "deep", task, rep)
            assert record.outcome == "mcp-malformed-frame"
            assert "too-deep" in record.mcp["detail"] and "987 levels" in record.mcp["detail"]
            assert record.stdout.bytes_kept == 0  # nothing of the refused answer is graded


def test_a_frame_nested_past_the_clients_own_decoder_ends_its_session_classified(
        mcp_run: Path) -> None:
    """Nested past the client's recursion limit, the frame is refused by the client itself:
    its session ends as a malformed frame (the warm call not sent), never a crashed client;
    the host, reading the kept frame, refuses it on its own bound as well."""
    for task in TASKS:
        session = read_record(_session(mcp_run, "deeper", task) / "record.json")
        assert session.outcome == "ok"
        results = {line["call"]: line for line in _transcript(mcp_run, "deeper", task)
                   if line["kind"] == "result"}
        assert results[0]["outcome"] == results[1]["outcome"] == "mcp-malformed-frame"
        assert "not a JSON-RPC message: maximum recursion depth" in results[0]["detail"]
        assert results[1]["detail"].startswith("not sent") and results[1]["sent"] is None
        for rep in (0, 1):
            assert _rep(mcp_run, "deeper", task, rep).outcome == "mcp-malformed-frame"


def _flood_session(run_dir: Path, mode: str, task: str) -> tuple[ExecRecord, list[dict]]:
    """The session's record and transcript, checked whole and under the client's bound."""
    session = read_record(_session(run_dir, mode, task) / "record.json")
    assert session.outcome == "ok", (mode, task, session.outcome)  # the client finished
    assert not session.stdout.truncated
    plan = session.argv[2].encode()
    assert session.stdout.bytes_kept <= mcp.transcript_bound(2, len(plan)) < 64 << 20
    lines = _transcript(run_dir, mode, task)
    assert lines[0]["kind"] == "start" and lines[-1]["kind"] == "end"
    return session, lines


def test_a_million_notifications_end_the_session_as_a_flood_not_tampered(
        mcp_run: Path) -> None:
    """Each tiny notification once cost a transcript line larger than itself, past the
    stream cap: every call was tampered. The client counts what it writes and ends the
    session at its budget: both calls mcp-flood, what was read past it only counted."""
    for task in TASKS:
        session, lines = _flood_session(mcp_run, "notify-flood", task)
        # The first call's own deadline (5 s) is not what ended it: the budget was.
        assert session.timing["wall_ns"] < (10 + 2 * MCP_CALL_TIMEOUT_S) * 1_000_000_000
        kept = [line for line in lines if line["kind"] == "recv" and "method" in
                line.get("frame", "")]
        assert 0 < len(kept) <= mcp.CHATTER_FRAMES
        (dropped,) = [line for line in lines if line["kind"] == "dropped"]
        assert dropped["frames"] >= 1 and dropped["bytes"] >= 31 * dropped["frames"]
        cold, warm = _rep(mcp_run, "notify-flood", task, 0), _rep(mcp_run, "notify-flood",
                                                                    task, 1)
        assert (cold.outcome, warm.outcome) == ("mcp-flood", "mcp-flood")
        assert "more than the transcript keeps" in cold.mcp["detail"]
        assert warm.mcp["detail"].startswith("not sent: the session had ended")
        assert cold.mcp["dropped"] == {"frames": dropped["frames"], "bytes": dropped["bytes"]}
        assert cold.stdout.bytes_kept == 0


def test_a_server_flooding_requests_and_never_reading_meets_the_calls_own_deadline(
        mcp_run: Path) -> None:
    """Answers to its requests once filled the pipe it never read and blocked the client
    until the exec's limit (generic timeout). Writes no longer block: the call times out
    at its own limit, the warm call is not sent, and the session ends long before the
    exec's limit."""
    for task in TASKS:
        session, lines = _flood_session(mcp_run, "request-flood", task)
        limit = mcp.session_timeout_s(mcp.Server(("x",), "2025-06-18", 10.0), 2,
                                      MCP_CALL_TIMEOUT_S)
        assert session.timing["wall_ns"] < (limit - 20) * 1_000_000_000
        pings = [line for line in lines if line["kind"] == "recv" and '"ping"' in
                 line.get("frame", "")]
        replies = [line for line in lines if line["kind"] == "send" and '"id":"p' in
                   line.get("frame", "")]
        # Every ping was read and answered, though the server read none of the answers.
        assert len(pings) == len(replies) == 5_000 and lines[-1]["unanswered"] == 0
        cold, warm = _rep(mcp_run, "request-flood", task, 0), _rep(mcp_run, "request-flood",
                                                                     task, 1)
        assert (cold.outcome, warm.outcome) == ("mcp-call-timeout", "mcp-call-timeout")
        assert "within the limit" in cold.mcp["detail"]
        assert warm.mcp["detail"].startswith("not sent: the session had ended")
        assert cold.timing["wall_ns"] is None


def test_a_notification_flood_under_the_demos_call_limit_is_a_flood_and_rg_is_unchanged(
        mcp_flood_run: TimedRun, mcp_run: Path) -> None:
    """With the demo's 120 s per call the old client wrote its 64 MiB before the deadline:
    the transcript was cut and every call tampered, and the session took minutes."""
    run_dir, task = mcp_flood_run.run_dir, TASKS[1]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    session, _ = _flood_session(run_dir, "notify-flood", task)
    assert session.timing["wall_ns"] < 30 * 1_000_000_000 < MCP_FLOOD_TIMEOUT_S * 1e9
    assert [_rep(run_dir, "notify-flood", task, rep).outcome for rep in (0, 1)] == [
        "mcp-flood", "mcp-flood"]
    assert mcp_flood_run.seconds < 120, mcp_flood_run.seconds
    rg = parsers.get_parser("rg")
    for rep in (0, 1):
        cell = run_dir / "cells" / "rg" / task / str(rep)
        assert read_record(cell / "record.json").outcome == "ok"
        rows = rg.parse((cell / "stdout").read_bytes(), b"", "references").rows
        alone = rg.parse((mcp_run / "cells" / "rg" / task / str(rep) / "stdout").read_bytes(),
                         b"", "references").rows
        assert rows and Counter(rows) == Counter(alone)  # rg's own order is not defined
