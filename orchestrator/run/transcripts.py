"""The on-disk record of one exec: the source of truth every later stage reads.

A cell directory holds `stdout`, `stderr` (verbatim bytes, capped) and `record.json`, which
is written last and atomically: an exec counts as done only when its record exists and the
streams beside it are the ones it describes (size and sha256). A run writes its cells without
an fsync each and makes them durable in batches (`fsutil.sync_filesystem`); after a crash
between two batches, a record whose streams did not reach the disk is not counted as done, and
a resume runs its cell again. The record is written by the orchestrator on the host, outside
every mount a container can write to. Its schema is `orchestrator/schemas/exec-record.schema.json`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_json, read_json, sha256_file
from orchestrator.sandbox.shared_checks import check_schema

SCHEMA = "sandbench.exec-record/1"
SCHEMA_FILE = "exec-record.schema.json"
RECORD_NAME = "record.json"

# Every failed exec carries exactly one of these, decided when it happens.
OUTCOMES = {
    "ok": "the tool exited 0",
    "nonzero-exit": "the tool exited with a non-zero code",
    "timeout": "the tool ran past its time limit and its process tree was killed",
    "oom": "the kernel's OOM killer ended the tool inside its memory limit",
    "signal": "the tool died of a signal it was not sent by sandbench",
    "spawn-error": "the tool could not be started (not found, not executable)",
    "tampered": "the helper's framed report is missing or malformed while the sandbox is up",
    "sandbox-unavailable": "the container or the engine went away during the exec",
    "sandbox-died": "the sandbox's container exited during the exec while the engine answered "
                    "(under gVisor: a pids or memory limit reached, or its kernel crashed): "
                    "the arm's later cells were not attempted",
}
# What the engine says of an exec's container once the exec gave no result.
RUNNING, EXITED, GONE = "running", "exited", "gone"
# The outcomes of one call of an MCP session (orchestrator/sandbox/mcp.py), each its own
# failure kind.
MCP_OUTCOMES = {
    "mcp-server-exited": "the MCP server exited (or never started) before answering",
    "mcp-version-mismatch": "the MCP server answered initialize with another protocol "
                            "version than the arm declares",
    "mcp-error-response": "the MCP server answered the request with a JSON-RPC error",
    "mcp-tool-error": "the MCP tool answered with isError: true",
    "mcp-malformed-frame": "a frame from the MCP server was not a JSON-RPC message, answered "
                           "no request, or was larger than the frame cap",
    "mcp-call-timeout": "the MCP server did not answer a request within its time limit",
    "mcp-flood": "the MCP server sent more frames besides its answers than the session's "
                 "transcript keeps, and the session was ended",
}
OUTCOMES.update(MCP_OUTCOMES)


@dataclass(frozen=True)
class StreamInfo:
    path: str
    bytes_total: int
    bytes_kept: int
    truncated: bool
    sha256: str


@dataclass(frozen=True)
class ExecRecord:
    run_id: str
    arm: str
    argv: list[str]
    env: dict[str, str]
    workdir: str
    user: str
    image_id: str
    container_id: str
    limits: dict[str, Any]
    started_at: str
    timing: dict[str, Any]
    exit: dict[str, Any]
    stdout: StreamInfo
    stderr: StreamInfo
    helper: dict[str, Any]
    outcome: str
    flags: list[str] = field(default_factory=list)
    schema: str = SCHEMA
    # How the command reached the container; records made before the resident executor
    # carry none and came through docker exec.
    exec_path: str = "docker-exec"
    # The engine the command ran on (`docker info` ID); None in records made before a run
    # could span several engines.
    engine: str | None = None
    # A call of an MCP session: its record is derived from the session's transcript
    # (orchestrator/sandbox/mcp.py); None for every plain exec.
    mcp: dict[str, Any] | None = None
    # The container runtime the command ran under (runc or runsc); None in records made
    # before runtimes were declared, which ran under runc.
    runtime: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("mcp", "runtime"):  # absent when None, as in records made before them
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_json(cls, data: Any, source: Path) -> ExecRecord:
        """A record read back, checked whole against its schema before any field is used."""
        check_schema(source, data, SCHEMA_FILE)
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        values["stdout"] = StreamInfo(**data["stdout"])
        values["stderr"] = StreamInfo(**data["stderr"])
        return cls(**values)


def write_record(cell_dir: Path, record: ExecRecord, *, durable: bool = True) -> Path:
    path = cell_dir / RECORD_NAME
    atomic_write_json(path, record.to_json(), durable=durable)
    return path


def streams_intact(cell_dir: Path, record: ExecRecord) -> bool:
    """Whether the cell's stdout and stderr are exactly what its record says was kept."""
    for info in (record.stdout, record.stderr):
        path = cell_dir / info.path
        try:
            if path.stat().st_size != info.bytes_kept or sha256_file(path) != info.sha256:
                return False
        except OSError:
            return False
    return True


def read_record(path: Path) -> ExecRecord:
    return ExecRecord.from_json(read_json(path), path)


def classify(result: dict[str, Any] | None, protocol_error: str | None, helper_exit: int | None,
             host_timed_out: bool, container: str) -> str:
    """One outcome per exec, from what the helper and the engine reported (`container`: the
    engine's RUNNING, EXITED or GONE, asked only when the helper gave no result)."""
    if host_timed_out:
        return "timeout"
    if result is None or protocol_error is not None:
        return {RUNNING: "tampered", EXITED: "sandbox-died"}.get(container, "sandbox-unavailable")
    if helper_exit not in (0, None):
        return "tampered"
    if result["timed_out"]:
        return "timeout"
    if result["signal"] == 9 and (result.get("oom_kills") or 0) > 0:
        return "oom"
    if result["spawn_error"]:
        return "spawn-error"
    if result["signal"] is not None:
        return "signal"
    if result["exit_code"] != 0:
        return "nonzero-exit"
    return "ok"


def sweep_flags(swept: int | None) -> list[str]:
    """Processes an earlier exec left running (a daemon whose helper was killed) were
    killed before this tool started: the cell is flagged, the tool in it is not failed."""
    return ["stray-processes"] if swept else []


def timing_flags(wall_ns: int | None, bracket_ns: int) -> list[str]:
    """A figure the tool could only have produced by forging it is flagged, never trusted."""
    if wall_ns is None:
        return []
    if wall_ns < 0 or wall_ns > bracket_ns:
        return ["impossible-timing"]
    return []
