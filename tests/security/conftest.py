"""Hostile arms against the real engine: one session builds the hostile images FROM the
locked base/probe ids, writes a private project (the real base, probe and rg recipes beside
the hostile ones, the rg arm, one arm per attack, small sealed suites on the demo corpus)
and runs it once with every hostile arm beside two well-behaved rg arms. The tests then read
that run's directory, and a few small runs of their own for attacks that would stop (or interrupt)
a run.

Everything the session makes is removed by recorded id: the hostile images (labelled
`sandbench.temporary=true`, so `sandbench cleanup` finds them if a session dies), and the
containers, which each run removes itself. Network attempts aim only at loopback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator import arms, corpus, images, suite
from orchestrator.run import rundir
from orchestrator.sandbox import canary, workfs
from orchestrator import labels as lb
from orchestrator.engine import Engine
from orchestrator.settings import Settings, load_settings
from orchestrator.suite import every_scorer_source
from orchestrator.run.transcripts import ExecRecord, read_record
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.security.reading import status_kib

SECURITY = Path(__file__).resolve().parent
REPO = SECURITY.parents[1]
HOSTILE_RECIPES = ("hostile", "hostile-helper", "hostile-health", "hostile-volume",
                   "hostile-mcp")
REAL_RECIPES = ("base", "probe", "rg", "python", "mcp")  # python: the parent of mcp
TASKS = ("references-money-csharp", "references-stock-level")  # sorted: the cell order
# The main suite's arms its guards refuse by design (a forged helper in the image, a VOLUME):
# the run ends `refused-arms`, naming them.
MAIN_REFUSED = {"h-helper", "h-volume"}
SUITE_TIMEOUT_S = 30
FLOOD_STDOUT = 8 << 30
FLOOD_STDERR = 2 << 30
FILL_CAP_MIB = 256
MAIN_RUN_ID = "run-main-hostile"  # the attacks are told where the main run lives
LOG_FLOOD = 32 << 20
KNOWN_LIMIT_KEYS = {"memory_mib", "pids", "cpus", "tmp_mib"}
ATTEMPT = re.compile(rb"^ATTEMPT (.*?) -> (\S+)(?: (.*))?$")


# -- the host-side loopback listener ----------------------------------------------------------

@dataclass
class Listener:
    """TCP and UDP sockets on the host's 127.0.0.1 (and ::1), counting whatever arrives."""

    port: int
    port6: int | None
    arrived: list[tuple[str, bytes]] = field(default_factory=list)
    _socks: list[tuple[str, socket.socket]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def open(cls) -> Listener:
        socks: list[tuple[str, socket.socket]] = []
        tcp, udp = canary.bind_loopback_pair()
        port = tcp.getsockname()[1]
        tcp.listen(16)
        socks += [("tcp4", tcp), ("udp4", udp)]
        port6 = None
        try:
            tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            tcp6.bind(("::1", 0))
            port6 = tcp6.getsockname()[1]
            udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            udp6.bind(("::1", port6))
            tcp6.listen(16)
            socks += [("tcp6", tcp6), ("udp6", udp6)]
        except OSError:
            port6 = None
        for _, s in socks:
            s.settimeout(0.1)
        listener = cls(port, port6, _socks=socks)
        listener._thread = threading.Thread(target=listener._watch, daemon=True,
                                            name="security-canary")
        listener._thread.start()
        return listener

    def _watch(self) -> None:
        while not self._stop.is_set():
            for kind, s in self._socks:
                try:
                    if kind.startswith("tcp"):
                        conn, peer = s.accept()
                        conn.settimeout(0.5)
                        try:
                            data = conn.recv(4096)
                        except OSError:
                            data = b""
                        conn.close()
                        self.arrived.append((f"{kind} from {peer}", data))
                    else:
                        data, peer = s.recvfrom(65536)
                        self.arrived.append((f"{kind} from {peer}", data))
                except (TimeoutError, OSError):
                    continue

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        for _, s in self._socks:
            s.close()


# -- the private project -------------------------------------------------------------------------

def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def hostile_arm(role: str, *, bench: Path, image: str = "hostile", args: tuple[str, ...] = (),
                limits: dict[str, int] | None = None, setup: tuple[list[str], float] | None = None,
                env: dict[str, str] | None = None, name: str | None = None) -> str:
    """An arm spec that runs `attack ROLE` for the references kind (its phases walk on with
    every cell) and declines the other kinds."""
    lines = [f"description = {_toml_str('tests/security hostile arm: ' + role)}",
             f"image = {_toml_str(image)}", 'parser = "rg"', "", "[env]",
             f"ATTACK_ARM = {_toml_str(name or 'h-' + role)}"]
    lines += [f"{k} = {_toml_str(v)}" for k, v in (env or {}).items()]
    if limits:
        lines += ["", "[limits]"] + [f"{k} = {v}" for k, v in limits.items()]
    if setup:
        lines += ["", "[setup]", f"argv = {_toml_list(setup[0])}", f"timeout_s = {setup[1]}"]
    argv = ["attack", role, "--bench", str(bench), "--run-dir",
            str(bench / "runs" / MAIN_RUN_ID), *args, "--", "{symbol}"]
    lines += ["", "[tasks.references]", f"argv = {_toml_list(argv)}"]
    return "\n".join(lines + references_only("tests/security/conftest.py")) + "\n"


def references_only(source: str) -> list[str]:
    """The TOML lines of a hostile arm that declines every kind but references."""
    lines: list[str] = []
    for kind in ("locate", "impact", "e2e-retrieval"):
        lines += ["", f"[not_attempted.{kind}]",
                  'reason = "a hostile test arm attempts only references tasks"',
                  f"source = {_toml_str(source)}"]
    return lines


def probe_arm(source: str, role: str, argv: list[str], parser: str = "rg",
              setup: list[str] | None = None) -> str:
    """A hostile arm on the locked probe image whose one command (`argv`, for every
    references task) is the attack, with an optional set-up step; the other kinds declined."""
    lines = [f"description = {_toml_str(source + ': ' + role)}", 'image = "probe"',
             f"parser = {_toml_str(parser)}", "", "[env]", 'HOME = "/state/home"']
    if setup:
        lines += ["", "[setup]", f"argv = {_toml_list(setup)}", "timeout_s = 60"]
    lines += ["", "[tasks.references]", f"argv = {_toml_list(argv)}"]
    return "\n".join(lines + references_only(source)) + "\n"


MCP_MODES = ("good", "exit-early", "version", "error", "malformed", "hang", "flood", "bigframe",
             "daemon", "forge", "network", "write", "deep", "deeper", "notify-flood",
             "request-flood")
MCP_CALL_TIMEOUT_S = 5
# The demo's call limit: long enough for a client to write past the exec's 64 MiB stream cap.
MCP_FLOOD_TIMEOUT_S = 120


def hostile_mcp_arm(mode: str, args: tuple[str, ...] = ()) -> str:
    """An MCP arm whose server is tests/security's `mcp-server MODE` (images/hostile-mcp):
    its tool `refs` answers the references kind in rg's format; the other kinds declined."""
    lines = [f"description = {_toml_str('tests/security hostile MCP server: ' + mode)}",
             'image = "hostile-mcp"', 'parser = "rg"', 'protocol = "mcp"', "", "[env]",
             'HOME = "/state/home"', "", "[mcp]",
             f"server = {_toml_list(['mcp-server', mode, *args])}",
             'protocol_version = "2025-06-18"', "initialize_timeout_s = 10", "",
             "[tasks.references]", 'tool = "refs"',
             'arguments = { symbol = "{symbol}", ext = "{ext}" }']
    return "\n".join(lines + references_only("tests/security/conftest.py")) + "\n"


def write_suite(project: Path, name: str, arm_names: list[str], tasks: tuple[str, ...],
                timeout_s: float = SUITE_TIMEOUT_S) -> None:
    demo = REPO / "suites" / "demo"
    folder = project / "suites" / name
    (folder / "tasks").mkdir(parents=True)
    for task in tasks:
        shutil.copy2(demo / "tasks" / f"{task}.toml", folder / "tasks" / f"{task}.toml")
    baseline = "rg" if "rg" in arm_names else arm_names[0]
    (folder / "suite.toml").write_text(
        f'version = 1\nname = "{name}"\ncorpus = "demo"\narms = {_toml_list(arm_names)}\n'
        f'baseline = "{baseline}"\nreps = 1\ntimeout_s = {timeout_s}\nprecision_cap = 20\n'
        "top_k = 5\n\n[bands]\nreferences_correct_recall = 0.75\n"
        "references_correct_max_outside = 2\nreferences_partial_recall = 0.40\n"
        "impact_partial_fraction = 0.5\n")
    (folder / "preregistration.md").write_text(
        f"# {name}: a security test suite (tests/security), not a benchmark\n")


def _copy_project(project: Path) -> None:
    (project / "images").mkdir(parents=True)
    for name in REAL_RECIPES:
        shutil.copytree(REPO / "images" / name, project / "images" / name, symlinks=True)
    for name in HOSTILE_RECIPES:
        shutil.copytree(SECURITY / "images" / name, project / "images" / name, symlinks=True)
    (project / "arms").mkdir()
    shutil.copy2(REPO / "arms" / "rg.toml", project / "arms" / "rg.toml")
    shutil.copy2(REPO / "arms" / "rg.toml", project / "arms" / "rg-late.toml")
    shutil.copy2(REPO / "corpus.lock", project / "corpus.lock")
    # The scorer's sources are sealed inputs of every suite: a private copy, so that an edit
    # in the checkout during the session cannot break the seal.
    (project / "orchestrator").mkdir()
    for source in every_scorer_source(REPO):
        if (REPO / source).is_dir():
            shutil.copytree(REPO / source, project / source,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (project / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / source, project / source)


def _build_hostile(engine: Engine, settings: Settings, token: str) -> list[str]:
    """Build the hostile recipes FROM their parents' locked ids, offline and labelled
    temporary, tag them under a session-unique name, and lock them in the private lock."""
    recipes = images.load_recipes(settings.images_dir)
    lock = images.ImageLock.load(settings.images_lock)
    built: list[str] = []
    try:
        for name in HOSTILE_RECIPES:  # parents first
            recipe = recipes[name]
            parent_id = lock.image_id(recipe.parent or "")
            build_args = {"BASE": parent_id}
            started = time.monotonic()
            image_id = None
            log: list[str] = []
            for chunk in engine.build(recipe.path, tag=None, build_args=build_args,
                                      offline=True, timeout_s=600,
                                      labels=lb.base_labels(**{lb.LABEL_TEMPORARY: "true",
                                                               lb.LABEL_IMAGE: name})):
                log.append(chunk.get("stream") or "")
                if "error" in chunk:
                    raise RuntimeError(f"building {name} failed: {chunk['error']}\n"
                                       + "".join(log[-20:]))
                if aux := chunk.get("aux"):
                    image_id = aux.get("ID", image_id)
            assert image_id, "".join(log[-20:])
            built.append(image_id)
            rhash = images.recipe_hash(recipe, build_args, parent_id)
            repository, tag = f"sandbench-security/{name}", token
            engine.tag(image_id, repository, tag)
            lock.images[name] = {
                "recipe_hash": rhash, "image_id": image_id, "tag": f"{repository}:{tag}",
                "parent": recipe.parent, "parent_id": parent_id, "build_args": build_args,
                "build_seconds": round(time.monotonic() - started, 3),
                "size_bytes": engine.inspect_image(image_id)["Size"],
                "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "tool_version": f"{name} (tests/security)"}
            lock.save()
    except BaseException:
        _remove_images(engine, built)
        raise
    return built


def _remove_images(engine: Engine, ids: list[str]) -> None:
    for image_id in reversed(ids):  # children first
        engine.remove_image(image_id, force=True)


# -- the session ----------------------------------------------------------------------------------

@dataclass
class World:
    engine: Engine
    settings: Settings
    listener: Listener
    canary_env: str
    canary_file: str
    decoy_sha256: str
    images: list[str]

    @property
    def bench(self) -> Path:
        return self.settings.bench_root


@pytest.fixture(scope="session")
def world(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    real = load_settings()
    images.build(engine, real, list(REAL_RECIPES))
    root = tmp_path_factory.mktemp("security")
    project, bench = root / "project", root / "bench"
    _copy_project(project)
    images.share_lock(real, bench)
    settings = Settings(project_root=project, bench_root=bench)
    token = f"s{secrets.token_hex(6)}"
    built = _build_hostile(engine, settings, token)
    listener = Listener.open()
    try:
        corpus.fetch(corpus.load_lock(project / "corpus.lock")["demo"], settings)
        canary_env, canary_file = f"envcanary-{secrets.token_hex(16)}", \
            f"filecanary-{secrets.token_hex(16)}"
        (bench / "canary.txt").write_text(canary_file + "\n")
        decoy = os.urandom(5 << 20)
        (bench / "decoy.bin").write_bytes(decoy)
        os.mkfifo(bench / "trap.fifo")
        victim = bench / "victim"
        (victim / "sub").mkdir(parents=True)
        (victim / "secret.txt").write_text("owned by root\n")
        (victim / "sub" / "inner.txt").write_text("owned by root\n")
        _write_arms(project, bench, listener)
        names = ["rg", "h-net", "h-read", "h-write", "h-priv", "h-fork", "h-oom", "h-fill",
                 "h-flood", "h-term", "h-out", "h-log", "h-channel", "h-helper", "h-health",
                 "h-volume", "rg-late"]
        write_suite(project, "main", names, TASKS)
        write_suite(project, "stop", ["h-stop", "rg"], TASKS[1:])
        write_suite(project, "names", ["h-names", "rg"], TASKS[1:])
        write_suite(project, "resume", ["h-resume", "rg"], TASKS[1:])
        write_suite(project, "mcp", ["rg", *(f"h-mcp-{m}" for m in MCP_MODES), "rg-late"],
                    TASKS, timeout_s=MCP_CALL_TIMEOUT_S)
        write_suite(project, "mcp-flood", ["rg", "h-mcp-notify-flood"], TASKS[1:],
                    timeout_s=MCP_FLOOD_TIMEOUT_S)
        for name in ("main", "stop", "names", "resume", "mcp", "mcp-flood"):
            suite.seal(suite.load_suite(settings.suites_dir, name), settings)
        yield World(engine, settings, listener, canary_env, canary_file,
                    hashlib.sha256(decoy).hexdigest(), built)
    finally:
        listener.close()
        _remove_images(engine, built)


def _write_arms(project: Path, bench: Path, listener: Listener) -> None:
    net_args = ("--port", str(listener.port)) + (("--port6", str(listener.port6))
                                                  if listener.port6 else ())
    # A limit key the orchestrator may gain for the writable mounts is set small here, so the
    # fill test holds the fix to a bound once there is one.
    extra = {k: 32 for k in sorted(arms.LIMIT_KEYS - KNOWN_LIMIT_KEYS) if k.endswith("_mib")}
    specs = {
        "h-net": hostile_arm("net", bench=bench, args=net_args),
        "h-read": hostile_arm("read", bench=bench),
        "h-write": hostile_arm("write", bench=bench),
        "h-priv": hostile_arm("priv", bench=bench),
        "h-fork": hostile_arm("fork", bench=bench, limits={"pids": 64}),
        "h-oom": hostile_arm("oom", bench=bench, limits={"memory_mib": 128}),
        "h-fill": hostile_arm("fill", bench=bench, args=("--cap-mib", str(FILL_CAP_MIB)),
                              limits={"tmp_mib": 16, **extra}),
        "h-flood": hostile_arm("flood", bench=bench,
                               args=("--stdout-bytes", str(FLOOD_STDOUT),
                                     "--stderr-bytes", str(FLOOD_STDERR))),
        "h-term": hostile_arm("term", bench=bench,
                              setup=(["attack", "term", "--setup"], 3)),
        "h-out": hostile_arm("out", bench=bench),
        "h-log": hostile_arm("log", bench=bench, args=("--log-bytes", str(LOG_FLOOD))),
        "h-channel": hostile_arm("channel", bench=bench),
        "h-helper": hostile_arm("noop", bench=bench, image="hostile-helper",
                                name="h-helper"),
        "h-health": hostile_arm("health", bench=bench, image="hostile-health"),
        "h-volume": hostile_arm("noop", bench=bench, image="hostile-volume", name="h-volume"),
        "h-stop": hostile_arm("stop", bench=bench),
        "h-names": hostile_arm("names", bench=bench),
        "h-resume": hostile_arm("resume", bench=bench, env={"HOME": "/state/home"},
                                setup=(["attack", "resume", "--setup", "--bench", str(bench)],
                                       30)),
    }
    for mode in MCP_MODES:
        args = ("--port", str(listener.port)) if mode == "network" else ()
        specs[f"h-mcp-{mode}"] = hostile_mcp_arm(mode, args)
    for name, text in specs.items():
        (project / "arms" / f"{name}.toml").write_text(text)


# -- the main run ----------------------------------------------------------------------------------


@dataclass
class MainRun:
    world: World
    run_dir: Path
    seconds: float
    rss_before_kib: int
    rss_peak_kib: int
    peak_reset: bool
    container_logs: dict[str, dict[str, Any]]

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "run.json").read_text())

    def cell(self, arm: str, phase: int) -> Path:
        """The cell directory that ran phase `phase` of `arm` (cells run task by task, cold
        rep 0 then warm rep 1)."""
        task, rep = divmod(phase, 2)
        return self.run_dir / "cells" / arm / TASKS[task] / str(rep)

    def record(self, arm: str, phase: int) -> ExecRecord:
        return read_record(self.cell(arm, phase) / "record.json")

    def attempts(self, arm: str, phase: int) -> dict[str, tuple[str, str]]:
        return attempts_in(self.cell(arm, phase) / "stdout")

    def state(self, arm: str) -> dict[str, Any]:
        return json.loads((self.run_dir / "arms" / arm / "state.json").read_text())

    def files(self, arm: str) -> AbstractContextManager[Path]:
        """The arm's work dir with its file systems mounted read-only: they are unmounted
        once the arm is done."""
        return workfs.opened(self.run_dir / "work" / arm)


def attempts_in(path: Path) -> dict[str, tuple[str, str]]:
    """`ATTEMPT what -> RESULT detail` lines of a transcript: what -> (RESULT, detail)."""
    found = {}
    for line in path.read_bytes().splitlines():
        if m := ATTEMPT.match(line):
            found[m.group(1).decode("utf-8", "replace")] = (
                m.group(2).decode(), (m.group(3) or b"").decode("utf-8", "replace"))
    return found


@pytest.fixture(scope="session")
def main_run(world: World) -> MainRun:
    """The one run of every hostile arm beside rg and rg-late, two arms at a time, with the
    canary variable in the orchestrator's environment and its peak RSS measured."""
    rss_before = status_kib("VmRSS")
    try:  # reset the peak RSS to now, so VmHWM after the run is the run's own peak
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    logs: dict[str, dict[str, Any]] = {}

    def progress(arm: str, cell: str, outcome: str) -> None:
        """After h-log's first cell, while its container still exists: how large the
        engine's log file of that container has grown."""
        if arm != "h-log" or cell != f"{TASKS[0]}/0":
            return
        try:
            (path,) = world.settings.runs_dir.glob(f"run-main-*/cells/{arm}/{cell}/record.json")
            cid = read_record(path).container_id
            inspect = world.engine.inspect_container(cid)
            log_path = inspect.get("LogPath") or ""
            logs[arm] = {"log_config": inspect["HostConfig"].get("LogConfig"),
                         "log_path": log_path,
                         "log_bytes": os.path.getsize(log_path) if log_path and
                         os.path.exists(log_path) else 0}
        except Exception as exc:  # noqa: BLE001 - never break the run from a probe
            logs[arm] = {"error": repr(exc)}

    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SANDBENCH_CANARY", world.canary_env)
        # A run directory the attacks are told of: the mounts no longer reveal it.
        mp.setattr(rundir, "new_run_id", lambda kind: MAIN_RUN_ID)
        run_dir = runner.run(world.settings, RunOptions("main", jobs=2), [pool.one(world.engine)],
                             progress=progress)
    seconds = time.monotonic() - started
    time.sleep(0.3)  # a late datagram still reaches the listener
    return MainRun(world, run_dir, seconds, rss_before, status_kib("VmHWM"), reset, logs)


@pytest.fixture(scope="session")
def mcp_run(world: World) -> Path:
    """One run of every hostile MCP server (tests/security/images/hostile-mcp) beside rg
    (first) and rg-late (last), two arms at a time; each call may take 5 s."""
    return runner.run(world.settings, RunOptions("mcp", jobs=2), [pool.one(world.engine)])


@pytest.fixture(scope="session")
def clean_rg(world: World) -> Path:
    """rg alone on the same suite: the rows its cells must match in the hostile run."""
    return runner.run(world.settings, RunOptions("main", arms=("rg",)), [pool.one(world.engine)])


def stream_bytes(label: bytes, size: int) -> bytes:
    """The attack script's deterministic non-UTF-8 stream (images/hostile/attack)."""
    specials = (b"\xff\xfe\x00\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\x80\xe2\x28\xa1"
                b"\r\n\x1b[2J\x1b]0;title\x07\xef\xbb\xbf\xf0\x9f\x92")
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(label + counter.to_bytes(8, "big")).digest() + specials
        counter += 1
    return bytes(out[:size])
