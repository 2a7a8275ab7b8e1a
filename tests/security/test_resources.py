"""5. Resources: a fork bomb, a memory balloon, filling /tmp and the writable mounts, a
stdout flood of gigabytes (the orchestrator's own memory measured), a process that ignores
SIGTERM and one that daemonises, and the container's log stream."""

from __future__ import annotations

import ast
import hashlib
import json
import resource

import pytest

from orchestrator.sandbox import workfs
from orchestrator.sandbox.spec import MIB
from tests.security.conftest import (
    FLOOD_STDERR,
    FLOOD_STDOUT,
    MainRun,
)

pytestmark = pytest.mark.integration
CAP = 64 * MIB  # the exec's default per-stream cap


def test_a_fork_bomb_is_held_by_the_pids_limit_and_swept(main_run: MainRun) -> None:
    tried = main_run.attempts("h-fork", 0)
    record = main_run.record("h-fork", 0)
    assert tried["pids.max"] == ("READ", "64")
    bomb = tried["fork bomb"][1]
    current = int(bomb.split("pids.current ")[1].split(",")[0])
    assert current <= 64
    assert tried["fork while the bomb runs"][0] == "EAGAIN"
    assert record.outcome == "ok" and record.exit["stray_killed"] > 10
    after = main_run.attempts("h-fork", 1)
    assert ast.literal_eval(after["foreign processes"][1]) == []  # nothing of the bomb left
    assert int(after["pids.current"][1]) < 10
    assert after["fork after the bomb"][0] == "OK"


def test_a_memory_balloon_is_recorded_as_an_oom_kill(main_run: MainRun) -> None:
    record = main_run.record("h-oom", 0)
    assert record.outcome == "oom" and record.exit["oom_killed"]
    assert record.exit["signal"] == 9 and record.exit["oom_kills"] >= 1
    assert record.limits["memory_bytes"] == 128 * MIB
    grew = [v for k, v in main_run.attempts("h-oom", 0).items() if k == "balloon"]
    assert grew and grew[-1][0] == "GREW"  # it never got to say OK
    assert "1 GiB allocated" not in (main_run.cell("h-oom", 0) / "stdout").read_text()
    after = main_run.record("h-oom", 1)
    assert after.outcome == "ok"  # the sandbox lives on after the kill


def test_tmp_is_bounded_by_its_declared_size(main_run: MainRun) -> None:
    tried = main_run.attempts("h-fill", 0)
    errno_name, written = tried["fill /tmp/fill"][1].split()
    assert errno_name == "ENOSPC" and int(written) <= 16 * MIB
    # /dev/shm: the engine's own 64 MiB tmpfs (not declared by the arm, see README).
    errno_name, written = tried["fill /dev/shm/fill"][1].split()
    assert errno_name == "ENOSPC" and int(written) <= 64 * MIB
    assert tried["write 1 MiB to /tmp after the fill"][0] == "OK"


def test_the_writable_mounts_are_bounded(main_run: MainRun) -> None:
    """Each writable mount is a file system of its own, sized by the arm's limits (here 32
    MiB each, and the corpus copy's own size plus 32 MiB): the fill stops at ENOSPC, long
    before the attack's own 256 MiB cap, and the probe saw each bound."""
    verdict = {r["guard"]: r for r in json.loads(
        (main_run.run_dir / "guards" / "h-fill" / "verdict.json").read_text())}
    sizes = verdict["mount_sizes"]
    assert sizes["ok"]
    assert sizes["expected"]["/state"] == sizes["expected"]["/out"] == f"<= {32 * MIB}"
    corpus_bound = int(sizes["expected"]["/corpus"].removeprefix("<= "))
    assert corpus_bound < 64 * MIB  # the demo corpus is well under 1 MiB
    tried = main_run.attempts("h-fill", 1)
    for mount in ("state", "out", "corpus"):
        result = tried[f"fill /{mount}/fill"][1]
        assert result.startswith("ENOSPC"), (mount, result)
        assert int(result.split()[-1]) <= min(sizes["found"][f"/{mount}"], 64 * MIB), result


def test_the_fill_attack_wrote_where_the_test_can_see_it(main_run: MainRun) -> None:
    """The evidence, measured on the host: what the attack says it wrote is in the arm's
    file systems, the sparse images hold no more than their declared size, and the bench
    root's disk lent them nothing beyond it."""
    tried = main_run.attempts("h-fill", 1)
    with main_run.files("h-fill") as work:
        sizes = {name: (work / name / "fill").stat().st_size
                 for name in ("state", "out", "corpus")}
    for name, size in sizes.items():
        assert size == int(tried[f"fill /{name}/fill"][1].split()[-1])
        image = workfs.image_path(main_run.run_dir / "work" / "h-fill", name)
        assert image.stat().st_blocks * 512 <= image.stat().st_size
    assert workfs.image_path(main_run.run_dir / "work" / "h-fill", "state").stat().st_size \
        == 32 * MIB
    state = main_run.state("h-fill")
    assert ["fill", sizes["state"]] in state["state_files"]
    assert state["state_bytes"] >= sizes["state"]


def test_a_stdout_flood_is_capped_flagged_and_costs_the_orchestrator_no_memory(
        main_run: MainRun) -> None:
    record = main_run.record("h-flood", 0)
    cell = main_run.cell("h-flood", 0)
    assert record.outcome == "ok"
    assert record.stdout.bytes_total == FLOOD_STDOUT
    assert record.stdout.bytes_kept == CAP and record.stdout.truncated
    assert (cell / "stdout").stat().st_size == CAP
    assert record.stdout.sha256 == hashlib.sha256(b"F" * CAP).hexdigest()
    stderr_flood = main_run.record("h-flood", 1)
    assert stderr_flood.stderr.bytes_total == FLOOD_STDERR and stderr_flood.stderr.truncated
    assert (main_run.cell("h-flood", 1) / "stderr").stat().st_size == CAP
    # The orchestrator's peak RSS over the whole run (every arm, two at a time) against its
    # RSS before it: flat.
    if main_run.peak_reset:
        grown_kib = main_run.rss_peak_kib - main_run.rss_before_kib
    else:  # pragma: no cover - clear_refs refused: the process-wide peak is an upper bound
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - main_run.rss_before_kib
    assert grown_kib < 100 * 1024, f"orchestrator RSS grew by {grown_kib} KiB"


def test_a_setup_that_ignores_sigterm_is_killed_at_its_timeout(main_run: MainRun) -> None:
    from orchestrator.run.transcripts import read_record
    record = read_record(main_run.run_dir / "cells" / "h-term" / "_setup" / "record.json")
    assert record.outcome == "timeout" and record.exit["timed_out"]
    assert not record.exit["host_timed_out"]
    assert record.exit["signal"] == 9  # TERM was ignored; KILL after the grace period
    assert 3.0 <= record.timing["wall_ns"] / 1e9 < 3.0 + 2.0 + 2.0
    tried = main_run.attempts("h-term", 0)
    # Neither its child nor its setsid grandchild is left.
    assert ast.literal_eval(tried["foreign processes after the set-up timeout"][1]) == []


def test_a_daemon_is_gone_once_the_tool_exits(main_run: MainRun) -> None:
    record = main_run.record("h-term", 0)
    assert record.outcome == "ok" and record.exit["stray_killed"] >= 1
    tried = main_run.attempts("h-term", 1)
    assert tried["daemon process"][0] == "GONE"
    assert tried["daemon heartbeat"][0] == "STILL"
    assert ast.literal_eval(tried["foreign processes"][1]) == []


def test_the_container_log_stream_cannot_fill_the_host_disk(main_run: MainRun) -> None:
    """PID 1's stdout (the container's log stream) does not even open: the PID 1 helper is
    non-dumpable. And the engine keeps no log of that container (log driver `none`): no log
    file, measured while the container lived."""
    tried = main_run.attempts("h-log", 0)
    assert tried["open PID 1's stdout (the container log)"][0] == "EACCES", tried
    assert not any(k.startswith("write PID 1's stdout") for k in tried)
    assert main_run.record("h-log", 0).outcome == "ok"
    seen = main_run.container_logs.get("h-log", {})
    assert "error" not in seen, seen
    assert seen == {"log_config": {"Type": "none", "Config": {}}, "log_path": "",
                    "log_bytes": 0}, seen


def test_no_sandbox_has_an_engine_log(main_run: MainRun) -> None:
    """Every arm's container, refused or not, was created with the `none` log driver, and
    guard `log_driver` checked it."""
    folders = sorted((main_run.run_dir / "guards").iterdir())
    assert {f.name for f in folders} == set(main_run.meta["arms"])
    for folder in folders:
        inspect = json.loads((folder / "inspect.json").read_text())
        assert inspect["HostConfig"]["LogConfig"]["Type"] == "none", folder.name
        assert not inspect.get("LogPath"), (folder.name, inspect.get("LogPath"))
        verdict = {r["guard"]: r for r in json.loads((folder / "verdict.json").read_text())}
        assert verdict["log_driver"]["ok"] and verdict["log_driver"]["found"] == "none", \
            folder.name
