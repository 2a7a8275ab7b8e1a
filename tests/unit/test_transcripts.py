"""Exec records: outcome classification, timing flags, and reading records back."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from orchestrator.run import transcripts
from orchestrator.errors import InputError

REPO = Path(__file__).resolve().parents[2]

OK = {"timed_out": False, "signal": None, "oom_kills": 0, "spawn_error": None, "exit_code": 0}


@pytest.mark.parametrize(("result", "protocol_error", "helper_exit", "host_to", "running",
                          "outcome"), [
    (OK, None, 0, False, True, "ok"),
    ({**OK, "exit_code": 2}, None, 0, False, True, "nonzero-exit"),
    ({**OK, "timed_out": True, "signal": 9, "exit_code": None}, None, 0, False, True, "timeout"),
    ({**OK, "signal": 9, "oom_kills": 1, "exit_code": None}, None, 0, False, True, "oom"),
    ({**OK, "signal": 9, "exit_code": None}, None, 0, False, True, "signal"),
    ({**OK, "spawn_error": "ENOENT", "exit_code": None}, None, 0, False, True, "spawn-error"),
    (None, "stream ended mid-frame", None, False, True, "tampered"),
    (OK, "frame after result", 0, False, True, "tampered"),
    (OK, None, 137, False, True, "tampered"),
    (None, "stream ended mid-frame", None, False, False, "sandbox-unavailable"),
    (None, "stream ended without a result", None, False, "exited", "sandbox-died"),
    (None, None, None, True, False, "timeout"),
    (None, None, None, True, "exited", "timeout"),
])
def test_every_exec_gets_one_outcome(result, protocol_error, helper_exit, host_to, running,
                                     outcome) -> None:
    container = running if isinstance(running, str) else (
        transcripts.RUNNING if running else transcripts.GONE)
    assert transcripts.classify(result, protocol_error, helper_exit, host_to,
                                container) == outcome
    assert outcome in transcripts.OUTCOMES


def test_a_figure_outside_the_host_bracket_is_flagged() -> None:
    assert transcripts.timing_flags(5_000, 10_000) == []
    assert transcripts.timing_flags(20_000, 10_000) == ["impossible-timing"]
    assert transcripts.timing_flags(-1, 10_000) == ["impossible-timing"]
    assert transcripts.timing_flags(None, 10_000) == []


def _record() -> transcripts.ExecRecord:
    stream = transcripts.StreamInfo("stdout", 3, 3, False, "0" * 64)
    return transcripts.ExecRecord(
        run_id="r", arm="rg", argv=["rg", "x"], env={"HOME": "/state/home"}, workdir="/corpus",
        user="65532:65532", image_id="sha256:" + "a" * 64, container_id="c",
        limits={"memory_bytes": 1, "pids": 1, "cpus": 1.0, "tmp_bytes": 1, "timeout_s": 1,
                "grace_s": 1, "cap_bytes": 1},
        started_at="2026-01-01T00:00:00Z",
        timing={"wall_ns": 1, "user_us": 1, "sys_us": 1, "maxrss_kb": 1, "host_bracket_ns": 2},
        exit={"exit_code": 0, "signal": None, "timed_out": False, "host_timed_out": False,
              "oom_killed": False, "oom_kills": 0, "spawn_error": None, "stray_killed": 0},
        stdout=stream, stderr=transcripts.StreamInfo("stderr", 0, 0, False, "0" * 64),
        helper={"version": "1", "exit_code": 0, "errors": [], "protocol_error": None,
                "stderr_tail": ""},
        outcome="ok")


def test_a_record_round_trips_and_matches_its_schema(tmp_path: Path) -> None:
    path = transcripts.write_record(tmp_path, _record())
    assert transcripts.read_record(path) == _record()
    schema = json.loads((REPO / "orchestrator/schemas/exec-record.schema.json").read_text())
    data = json.loads(path.read_text())
    # exec_path and engine are written in every record now; records made before they
    # existed lack them.
    assert set(schema["required"]) == set(data) - {"exec_path", "engine"}
    assert data["exec_path"] in schema["properties"]["exec_path"]["enum"]
    for key in ("timing", "exit", "helper", "limits"):
        assert set(schema["properties"][key]["required"]) == set(data[key]), key
    assert set(schema["$defs"]["stream"]["required"]) == set(data["stdout"])
    assert set(schema["properties"]["outcome"]["enum"]) == set(transcripts.OUTCOMES)


@pytest.mark.parametrize(("mutate", "key"), [
    (lambda d: d.pop("timing"), "timing"),
    (lambda d: d.update(schema="other/9"), "schema"),
    (lambda d: d.update(outcome="fine"), "outcome"),
    (lambda d: d["stdout"].pop("sha256"), "stdout"),
])
def test_a_bad_record_names_file_and_key(tmp_path: Path, mutate, key: str) -> None:
    path = transcripts.write_record(tmp_path, _record())
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=key) as err:
        transcripts.read_record(path)
    assert str(path) in str(err.value)


def test_a_half_written_record_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    path.write_text('{"schema": "sandbench.exec-rec')
    with pytest.raises(InputError, match="does not parse"):
        transcripts.read_record(path)
    with pytest.raises(InputError, match="missing"):
        transcripts.read_record(tmp_path / "absent" / "record.json")


def test_a_sweep_before_the_tool_flags_the_cell_not_the_tool() -> None:
    assert transcripts.sweep_flags(None) == [] and transcripts.sweep_flags(0) == []
    assert transcripts.sweep_flags(2) == ["stray-processes"]
    schema = json.loads((REPO / "orchestrator/schemas/exec-record.schema.json").read_text())
    assert "stray-processes" in schema["properties"]["flags"]["items"]["enum"]
    # Optional: records written before the sweep existed (the golden run) stay valid.
    exit_schema = schema["properties"]["exit"]
    assert "stray_swept" in exit_schema["properties"]
    assert "stray_swept" not in exit_schema["required"]


def test_a_cell_counts_only_with_the_streams_its_record_describes(tmp_path: Path) -> None:
    """Cells are written without an fsync each: after a crash a record can outlive the
    streams it describes, and such a cell must not count as done."""
    import hashlib
    out = b"a.py\n"
    record = dataclasses.replace(
        _record(), stdout=transcripts.StreamInfo("stdout", 5, 5, False,
                                                 hashlib.sha256(out).hexdigest()),
        stderr=transcripts.StreamInfo("stderr", 0, 0, False, hashlib.sha256(b"").hexdigest()))
    transcripts.write_record(tmp_path, record, durable=False)
    (tmp_path / "stdout").write_bytes(out)
    (tmp_path / "stderr").write_bytes(b"")
    assert transcripts.streams_intact(tmp_path, record)
    (tmp_path / "stdout").write_bytes(b"")  # written back as empty: data lost, size differs
    assert not transcripts.streams_intact(tmp_path, record)
    (tmp_path / "stdout").write_bytes(b"b.py\n")  # same size, other bytes
    assert not transcripts.streams_intact(tmp_path, record)
    (tmp_path / "stdout").unlink()
    assert not transcripts.streams_intact(tmp_path, record)


def test_a_batch_of_writes_is_made_durable_by_one_sync(tmp_path: Path) -> None:
    from orchestrator import fsutil
    fsutil.atomic_write_json(tmp_path / "a.json", {"n": 1}, durable=False)
    assert json.loads((tmp_path / "a.json").read_text()) == {"n": 1}
    assert not list(tmp_path.glob(".a.json.*"))  # renamed into place, no temp file left
    fsutil.sync_filesystem(tmp_path)
    with pytest.raises(FileNotFoundError):
        fsutil.sync_filesystem(tmp_path / "absent")
