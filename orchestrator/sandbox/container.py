"""One long-lived, hardened container per (run, arm), and the exec path into it.

The container is created from the locked image id with no network, a read-only root, a
size-limited /tmp, no-new-privileges, pids/memory/CPU limits and the timing helper as PID 1,
the executor: the container's uid 0 with only CAP_SETUID and CAP_SETGID, which starts each
command as the run's non-root uid with no capability (isolation/table.py, `user`). It holds only
the mounts the caller declares, plus the host's static `sandbench-exec` (its sha256 in the
image lock) bind-mounted read-only at a path no image provides, and exactly the environment
the arm declares (with HOME=/ where neither arm nor image gives one). Every measured command runs
through `docker exec` of that mounted helper, which times the tool's process tree inside the
container and frames its output so the tool cannot forge the figures.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from orchestrator import labels, log, placement
from orchestrator.sandbox import canary as canary_mod, execproto, runtimes, spec as sandbox_spec
from orchestrator.engine import AttachChannel, Engine, ExecStream
from orchestrator.errors import EngineError, GuardViolation, SandbenchError
from orchestrator.isolation import folds, guards, inside
from orchestrator.isolation.policy import DeclaredMount, GuardPolicy, GuardResult
from orchestrator.isolation.values import EXECUTOR_USER, HELPER_PATH as HELPER
from orchestrator.sandbox.spec import MIB, SandboxSpec
from orchestrator.fsutil import atomic_write_bytes
from orchestrator.run.transcripts import (EXITED, GONE, RUNNING, ExecRecord, StreamInfo, classify,
                                      sweep_flags, timing_flags, write_record)

HOST_MARGIN_S = 30.0

logger = log.get(__name__)


class Sandbox:
    """A started container; removed by id on exit, even when starting failed half-way."""

    def __init__(self, engine: Engine, spec: SandboxSpec, engine_id: str | None = None,
                 helper: placement.MountedHelper | None = None) -> None:
        self.engine = engine
        self.spec = spec
        self.engine_id = engine_id  # named in every record this sandbox writes
        # How the engine mounts the helper, and its digest guarded across the start: the
        # engine's placement's (the engine on this host's when not given).
        self.helper = helper if helper is not None else placement.mounted_helper()
        self.container_id: str | None = None
        self.policy: GuardPolicy | None = None
        self.host_snapshot: dict[str, Any] = {}
        # PID 1's attach stream, when the spec asks for the resident executor.
        self.channel: AttachChannel | None = None

    def __enter__(self) -> Sandbox:
        try:
            self.start()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            self.remove()
        except EngineError as err:
            if exc_type is None:
                raise
            # Already failing (often because the engine is gone): the container carries our
            # labels, so `sandbench cleanup` or the next resume removes it.
            logger.warning("sandbox_left_behind", arm=self.spec.arm, container=self.container_id,
                           error=err.what)

    def start(self) -> None:
        """Create and start the container where its placement mounts the helper. When the
        helper cannot even be read no container is made, and `verify` refuses the arm on
        the helper's guard."""
        self._require_runtime()
        image = self.engine.inspect_image(self.spec.image_id)
        image_env = image.get("Config", {}).get("Env") or []
        self.spec = dataclasses.replace(sandbox_spec.with_home(self.spec, image_env),
                                        engine=self.engine.dialect)
        self.policy = self._policy(image["Id"], image_env)
        self.host_snapshot = self.helper.start(self.spec, self._create_and_start)
        if self.container_id is not None:
            logger.info("sandbox_started", arm=self.spec.arm, container=self.container_id[:12])

    def _require_runtime(self) -> None:
        """An arm that asks for a runtime the engine lacks is refused by name, never run
        under another."""
        if self.spec.runtime == runtimes.RUNC or runtimes.engine_has(self.engine.info(),
                                                                       self.spec.runtime):
            return
        raise SandbenchError(f"arm {self.spec.arm!r} asks for the container runtime "
                             f"{self.spec.runtime!r}, which the engine "
                             f"{self.engine_id or self.engine.address} does not have",
                             fix=runtimes.REGISTER_FIX)

    def _create_and_start(self) -> None:
        self.container_id = self.engine.create_container(
            self.spec.create_kwargs(), what=f"create container for {self.spec.arm}")
        self.engine.start(self.container_id)
        if self.spec.exec_path == sandbox_spec.RESIDENT:
            self.channel = self.engine.attach(self.container_id)

    def _policy(self, image_id: str, image_env: list[str]) -> GuardPolicy:
        return GuardPolicy(
            run_id=self.spec.run_id, arm=self.spec.arm, image_id=image_id,
            user=self.spec.user, env=_merge_env(image_env, self.spec.env),
            mounts=[DeclaredMount(str(m.source), m.target, m.read_only, m.size_bytes,
                                         m.volume) for m in self.spec.mounts],
            labels={labels.LABEL_RUN: self.spec.run_id, labels.LABEL_ARM: self.spec.arm},
            helper={"source": str(self.spec.helper.source), "sha256": self.spec.helper.sha256},
            exec_path=self.spec.exec_path, values=folds.policy_values(self.spec))

    def remove(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.container_id is None:
            return
        self.engine.remove_container(self.container_id)
        logger.info("sandbox_removed", arm=self.spec.arm, container=self.container_id[:12])
        self.container_id = None

    def inspect(self) -> dict[str, Any]:
        return self.engine.inspect_container(self.require_id())

    def require_id(self) -> str:
        if self.container_id is None:
            raise SandbenchError(f"sandbox for {self.spec.arm!r} is not started")
        return self.container_id

    def container_state(self) -> tuple[str, dict[str, Any]]:
        """The engine's word on the container: RUNNING; EXITED, with its end as the engine
        reports it (exit code, OOM flag, error); or GONE (removed, or no engine answers)."""
        try:
            state = self.inspect()["State"]
        except EngineError:  # EngineNotFound among them: gone is not running
            return GONE, {}
        if state.get("Running"):
            return RUNNING, {}
        return EXITED, {"exit_code": state.get("ExitCode"), "oom_killed": state.get("OOMKilled"),
                        "error": str(state.get("Error") or "")}

    def _state_after_lost_stream(self, settle_s: float = 1.0) -> tuple[str, dict[str, Any]]:
        """The container's state once an exec's stream ended without a result: one that
        just died may still be reported running for a moment, so it is asked again until
        it is not or `settle_s` has passed (a tampered cell's container stays running)."""
        deadline = time.monotonic() + settle_s
        state = self.container_state()
        while state[0] == RUNNING and time.monotonic() < deadline:
            time.sleep(0.1)
            state = self.container_state()
        return state

    # -- guards ----------------------------------------------------------------------------

    def verify(self, folder: Path) -> list[GuardResult]:
        """Outside first; only a container that passes it runs the probe. Both snapshots and
        the verdict are stored in `folder`; any failure refuses the arm."""
        assert self.policy is not None
        # No container means start() could not open the helper: every outside guard is
        # judged on an empty inspect, and the helper's guard says why.
        inspect = self.inspect() if self.container_id is not None else {}
        results = guards.check_outside(self.policy, inspect, self.host_snapshot)
        probe = None
        if not guards.failures(results):
            with canary_mod.loopback_canary() as canary:
                facts = self._probe(canary.port)
                time.sleep(0.05)  # let a datagram that did escape reach the canary
                # No report: every inside guard is judged on no facts, so the arm is refused
                # (and audit finds the same from the stored probe), the run goes on.
                probe = {"facts": facts or {}, "canary": canary.snapshot()}
            results += guards.check_inside(self.policy, probe)
        guards.store(folder, self.policy, inspect, self.host_snapshot, probe, results)
        if failed := guards.failures(results):
            if not inspect:
                failed = [r for r in failed if r.guard == "helper_digest"]
            raise GuardViolation(self.spec.arm, failed)
        logger.info("guards_verified", arm=self.spec.arm, guards=len(results))
        return results

    def _probe(self, port: int) -> dict[str, Any] | None:
        """The probe's report, or None (logged with why) when it gave none: a probe killed in
        the container (its pids limit reached under gVisor, say) refuses that arm alone."""
        argv = [HELPER, "probe", "--as", self.spec.user, "--connect", f"127.0.0.1:{port}",
                "--lookup", inside.PROBE_LOOKUP, "--write", inside.PROBE_WRITE,
                *(a for d in self.spec.tool_writable for a in ("--writable", d))]
        with open(os.devnull, "wb") as discard:  # the report is in the frames, not the streams
            decoded, _, _ = self._exec_stream(argv, discard, discard, 1 << 20, timeout_s=30)
        if decoded.probe is None:
            logger.error("probe_no_report", arm=self.spec.arm,
                         why=decoded.protocol_error or "; ".join(decoded.helper_errors))
        return decoded.probe

    # -- exec -----------------------------------------------------------------------------

    def exec(self, argv: list[str], cell_dir: Path, *, timeout_s: float = 600,
             grace_s: float = 2.0, cap_bytes: int = 64 * MIB, workdir: str | None = None,
             durable: bool = True) -> ExecRecord:
        """Run `argv` under the timing helper; stream stdout and stderr to `cell_dir` and
        write its record last, atomically. `durable=False` leaves the fsyncs to the caller's
        next `fsutil.sync_filesystem` (a run batches them; see transcripts)."""
        cell_dir.mkdir(parents=True, exist_ok=True)
        helper_argv = [HELPER, "run", "--as", self.spec.user, "--sweep",
                       "--timeout-ms", str(int(timeout_s * 1000)),
                       "--grace-ms", str(int(grace_s * 1000)), "--cap-bytes", str(cap_bytes),
                       "--cwd", workdir or self.spec.workdir, "--", *argv]
        started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with tempfile.NamedTemporaryFile(dir=cell_dir, prefix=".stdout.", delete=False) as out, \
                tempfile.NamedTemporaryFile(dir=cell_dir, prefix=".stderr.", delete=False) as err:
            try:
                decoded, bracket_ns, meta = self._exec_stream(
                    helper_argv, out, err, cap_bytes,
                    timeout_s=timeout_s + grace_s + HOST_MARGIN_S)
                for fh in (out, err):
                    fh.flush()
                    if durable:
                        os.fsync(fh.fileno())
            except BaseException:
                Path(out.name).unlink(missing_ok=True)
                Path(err.name).unlink(missing_ok=True)
                raise
        os.replace(out.name, cell_dir / "stdout")
        os.replace(err.name, cell_dir / "stderr")
        result = decoded.result
        # Whether the sandbox still runs only decides a cell that gave no result: asking the
        # engine for every cell would cost an inspect per call.
        container, end = (RUNNING, {}) if result is not None and decoded.protocol_error is None \
            else self._state_after_lost_stream()
        outcome = classify(result, decoded.protocol_error, meta["helper_exit"],
                           meta["host_timed_out"], container)
        if outcome == "sandbox-died":
            logger.error("sandbox_died", arm=self.spec.arm, container=self.require_id()[:12],
                         **end)
        r = result or {}
        flags = timing_flags(r.get("wall_ns"), bracket_ns) + sweep_flags(r.get("stray_swept"))
        if meta["host_timed_out"]:
            flags.append("host-backstop")
        record = ExecRecord(
            run_id=self.spec.run_id, arm=self.spec.arm, argv=list(argv),
            env=dict(self.spec.env), workdir=workdir or self.spec.workdir,
            user=self.spec.user, image_id=self.spec.image_id,
            container_id=self.require_id(), runtime=self.spec.runtime,
            limits={**folds.record_limits(self.spec.limits, self.spec.runtime),
                    "timeout_s": timeout_s, "grace_s": grace_s, "cap_bytes": cap_bytes},
            started_at=started_at,
            timing={"wall_ns": r.get("wall_ns"), "user_us": r.get("user_us"),
                    "sys_us": r.get("sys_us"), "maxrss_kb": r.get("maxrss_kb"),
                    "host_bracket_ns": bracket_ns},
            exit={"exit_code": r.get("exit_code"), "signal": r.get("signal"),
                  "timed_out": bool(r.get("timed_out")) or meta["host_timed_out"],
                  "host_timed_out": meta["host_timed_out"],
                  "oom_killed": outcome == "oom", "oom_kills": r.get("oom_kills"),
                  "spawn_error": r.get("spawn_error"), "stray_killed": r.get("stray_killed"),
                  "stray_swept": r.get("stray_swept"),
                  **({"sandbox": end} if outcome == "sandbox-died" else {})},
            stdout=_stream_info("stdout", r, decoded.stdout_written, decoded.stdout_sha256),
            stderr=_stream_info("stderr", r, decoded.stderr_written, decoded.stderr_sha256),
            helper={"version": r.get("helper_version"), "exit_code": meta["helper_exit"],
                    "errors": decoded.helper_errors, "protocol_error": decoded.protocol_error,
                    "stderr_tail": meta["helper_stderr"]},
            outcome=outcome, flags=flags, exec_path=self.spec.exec_path, engine=self.engine_id)
        write_record(cell_dir, record, durable=durable)
        return record

    def not_attempted(self, argv: list[str], cell_dir: Path, died: ExecRecord, died_in: str,
                      *, durable: bool = True) -> ExecRecord:
        """The record of a cell not run because the sandbox died in an earlier one (`died`,
        in cell `died_in`): that end, no output, flagged not-attempted."""
        cell_dir.mkdir(parents=True, exist_ok=True)
        for name in ("stdout", "stderr"):
            atomic_write_bytes(cell_dir / name, b"", durable=durable)
        nothing = hashlib.sha256(b"").hexdigest()
        record = dataclasses.replace(
            died, argv=list(argv), mcp=None, outcome="sandbox-died", flags=["not-attempted"],
            started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            timing={"wall_ns": None, "user_us": None, "sys_us": None, "maxrss_kb": None,
                    "host_bracket_ns": 0},
            exit={**died.exit, "sandbox": {**died.exit["sandbox"], "died_in": died_in}},
            stdout=StreamInfo("stdout", 0, 0, False, nothing),
            stderr=StreamInfo("stderr", 0, 0, False, nothing),
            helper={"version": None, "exit_code": None, "errors": [], "protocol_error": None,
                    "stderr_tail": ""})
        write_record(cell_dir, record, durable=durable)
        return record

    def _exec_stream(self, argv: list[str], stdout_sink: IO[bytes], stderr_sink: IO[bytes],
                     cap: int, timeout_s: float
                     ) -> tuple[execproto.DecodedExec, int, dict[str, Any]]:
        """One command through the resident channel, or one `docker exec`: the helper's
        framed stdout is decoded as it arrives; a watchdog kills the container if the
        in-container timeout itself fails (the host backstop)."""
        cid = self.require_id()
        began = time.monotonic_ns()
        stream: ExecStream | _ResidentCall = (
            _ResidentCall(self.channel, argv[1:]) if self.channel is not None else
            self.engine.exec(cid, argv, user=EXECUTOR_USER, timeout_s=timeout_s + 5))
        timed_out = threading.Event()

        def backstop() -> None:
            timed_out.set()
            logger.warning("host_backstop", arm=self.spec.arm, container=cid[:12])
            self.engine.kill(cid)

        watchdog = threading.Timer(timeout_s, backstop)
        watchdog.daemon = True
        helper_stderr = bytearray()

        def frames() -> Iterator[bytes]:
            for out, err in stream.chunks():
                if err and len(helper_stderr) < 4096:
                    helper_stderr.extend(err[: 4096 - len(helper_stderr)])
                if out:
                    yield out
            if stream.broken:
                logger.warning("exec_stream_broken", arm=self.spec.arm, error=stream.broken)
                if isinstance(stream, _ResidentCall):
                    # A channel out of step cannot carry another request: the sandbox is
                    # gone for every later cell, which then records that.
                    self.engine.kill(cid)

        watchdog.start()
        try:
            decoded = execproto.decode_exec_stream(frames(), stdout_sink, stderr_sink, cap)
            watchdog.cancel()
            helper_exit = stream.exit_code()
            bracket = time.monotonic_ns() - began
        finally:
            watchdog.cancel()
            stream.close()
        return decoded, bracket, {"helper_exit": helper_exit, "host_timed_out": timed_out.is_set(),
                                  "helper_stderr": helper_stderr.decode("utf-8", "replace")}


class _ResidentCall:
    """One request on PID 1's attach stream, read back as the (stdout, stderr) chunks a
    `docker exec` of the same helper command would give: the envelope is taken off here."""

    def __init__(self, channel: AttachChannel, args: list[str]) -> None:
        self._channel = channel
        self._envelope = execproto.Envelope()
        self.broken: str | None = None
        channel.send(execproto.encode_request(args))

    def chunks(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        while self._envelope.end is None:
            got = self._channel.receive()
            if got is None:
                self.broken = "the attach stream ended before the answer did"
                return
            stream, data = got
            if stream != AttachChannel.STDOUT:
                yield None, data
                continue
            inner = self._envelope.feed(data)
            if inner:
                yield inner, None
            if self._envelope.error is not None:
                self.broken = self._envelope.error
                return

    def exit_code(self) -> int | None:
        return self._envelope.exit_code()

    def close(self) -> None:
        """The channel lives as long as the sandbox."""


def _stream_info(name: str, result: dict[str, Any], kept: int, sha256: str) -> StreamInfo:
    """The tool's total comes from the helper; what was kept is what reached the file."""
    total = result.get(f"{name}_bytes", kept)
    return StreamInfo(name, total, kept, bool(result.get(f"{name}_truncated")) or total > kept,
                      sha256)


def _merge_env(image_env: list[str], declared: dict[str, str]) -> list[str]:
    merged = dict(e.split("=", 1) for e in image_env if "=" in e)
    merged.update(declared)
    return sorted(f"{k}={v}" for k, v in merged.items())
