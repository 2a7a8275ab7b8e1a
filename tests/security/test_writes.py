"""3. Writing where it must not: the root file system, /etc, the pristine corpus, another
arm's copy, the run's own records; and forging a record: fake frames, a killed or signalled
helper, a replaced helper, code the image makes the engine run beside the cells."""

from __future__ import annotations

import ast
import hashlib
import json

import pytest

from orchestrator.run.transcripts import read_record
from tests.security.conftest import MainRun

pytestmark = pytest.mark.integration


def test_the_root_file_system_and_etc_refuse_every_write(main_run: MainRun) -> None:
    tried = main_run.attempts("h-write", 0)
    inside = ["/sandbench-hostile", "/etc/passwd", "/etc/sandbench-hostile", "/etc/hosts",
              "/etc/resolv.conf", "/etc/hostname", "/.sandbench/sandbench-exec",
              "/usr/bin/rg", "/var/tmp/x", "/root/x", "/sys/fs/cgroup/pids/pids.max",
              "/proc/sys/kernel/hostname", "/proc/sysrq-trigger"]
    for what in (f"write {path}" for path in inside):
        assert tried[what][0] in {"EROFS", "EACCES", "ENOENT"}, (what, tried[what])
    assert tried["mkdir /opt/hostile"][0] == "EROFS"
    assert tried["remount / rw"][0] != "OK" and "must be superuser" in tried["remount / rw"][1]


def test_host_paths_are_not_there_to_write(main_run: MainRun) -> None:
    tried = main_run.attempts("h-write", 0)
    host = [k for k in tried if k.startswith("write ") and not k.startswith("write own /")
            and any(w in k for w in ("pristine", "rg corpus", "record.json", "run.json",
                                     "image lock"))]
    assert len(host) == 12, host
    for what in host:
        # Not mounted (ENOENT); through /proc/1/root, refused at PID 1's proc entry (EACCES).
        assert tried[what][0] in {"ENOENT", "EACCES"}, (what, tried[what])
        if not what.endswith("via /proc/1/root"):
            assert tried[what][0] == "ENOENT", (what, tried[what])


def test_writes_to_its_own_mounts_are_disclosed_and_stay_its_own(main_run: MainRun) -> None:
    tried = main_run.attempts("h-write", 0)
    assert tried["modify own /corpus/README.md"][0] == "OK"
    state = main_run.state("h-write")
    assert [(c["path"], c["status"]) for c in state["corpus_changes"]] == \
        [("README.md", "modified")]
    assert "forged-record.json" in {path for path, _ in state["state_files"]}
    for arm in ("rg", "rg-late"):
        assert main_run.state(arm)["corpus_changes"] == []
    meta = main_run.meta
    assert meta["corpus"]["pristine_digest_before"] == meta["corpus"]["pristine_digest_after"]
    # The records on the host are the orchestrator's, not what the tool wrote in /state.
    for record in (main_run.run_dir / "cells" / "h-write").glob("*/*/record.json"):
        assert read_record(record).arm == "h-write"


def test_forged_frames_stay_tool_output_and_the_record_keeps_the_real_figures(
        main_run: MainRun) -> None:
    cell = main_run.cell("h-write", 0)
    record = main_run.record("h-write", 0)
    stdout, stderr = (cell / "stdout").read_bytes(), (cell / "stderr").read_bytes()
    assert stderr.startswith(b"o\0\0\0\0r\0\0\x01") and b'"wall_ns":1,' in stderr
    assert stderr in stdout  # the same fake frames, verbatim, inside the tool's stdout
    assert record.outcome == "nonzero-exit" and record.exit["exit_code"] == 7
    assert 1_000_000 < record.timing["wall_ns"] <= record.timing["host_bracket_ns"]
    assert record.stdout.bytes_total == len(stdout) and record.stderr.bytes_total == len(stderr)
    assert record.stdout.sha256 == hashlib.sha256(stdout).hexdigest()
    assert record.flags == [] and record.helper["protocol_error"] is None


def test_a_tool_cannot_signal_its_helper(main_run: MainRun) -> None:
    """The runner's real uid is the executor's: the tool's SIGTERM is refused, and the cell
    is the tool's own, measured in full."""
    tried = main_run.attempts("h-write", 1)
    assert tried["kill -TERM helper"][0] == "EPERM", tried["kill -TERM helper"]
    record = main_run.record("h-write", 1)
    assert record.outcome == "ok" and record.helper["errors"] == [], record.helper


def test_a_tool_cannot_kill_its_helper_and_leaves_nothing_behind(main_run: MainRun) -> None:
    """SIGKILL to the runner is refused too; the daemon the tool started is still the
    runner's descendant, killed when the command ends, so the next cell of the same sandbox
    finds nothing to sweep."""
    tried = main_run.attempts("h-write", 2)
    assert tried["kill -9 helper"][0] == "EPERM", tried["kill -9 helper"]
    record = main_run.record("h-write", 2)
    assert record.outcome == "ok" and record.timing["wall_ns"] is not None
    assert record.exit["stray_killed"] >= 1, record.exit
    nxt = main_run.record("h-write", 3)
    assert nxt.outcome == "ok" and nxt.flags == [] and nxt.exit["stray_swept"] == 0
    later = main_run.attempts("h-write", 3)
    assert later["daemon process"][0] == "GONE", later["daemon process"]
    assert later["daemon heartbeat"][0] == "STILL", later["daemon heartbeat"]
    swept = [p for p in (main_run.run_dir / "cells").glob("*/*/*/record.json")
             if "stray-processes" in read_record(p).flags]
    assert swept == []


def test_a_replaced_timing_helper_is_refused_or_its_cells_flagged(main_run: MainRun) -> None:
    """The image brings a forging sandbench-exec, on PATH and at the mount's own path. Never
    run: PID 1, the probe and every exec use the host's helper mounted over it (guards
    helper_mount, helper_digest, pid1 pass), and the arm is refused because the image carries
    a helper at all."""
    if not main_run.meta["arms"]["h-helper"].get("refused"):
        unflagged = [p for p in (main_run.run_dir / "cells" / "h-helper").glob("*/*/record.json")
                     if not read_record(p).flags and read_record(p).outcome == "ok"]
        assert unflagged == []
        return
    folder = main_run.run_dir / "guards" / "h-helper"
    verdict = {r["guard"]: r for r in json.loads((folder / "verdict.json").read_text())}
    assert [g for g, r in verdict.items() if not r["ok"]] == ["image_helpers"]
    assert verdict["image_helpers"]["found"] == ["/usr/local/bin/sandbench-exec"]
    for guard in ("helper_mount", "helper_digest", "pid1", "mount_list", "mount_modes"):
        assert verdict[guard]["ok"], verdict[guard]
    assert "image_helpers" in main_run.meta["arms"]["h-helper"]["refused"]
    assert not (main_run.run_dir / "cells" / "h-helper").exists()


def test_an_images_healthcheck_runs_nothing_in_the_sandbox(main_run: MainRun) -> None:
    """The arm runs (it is not refused), but the image's health check never does: after six
    seconds of a one-second interval, no trace of it and no process it would leave."""
    assert not main_run.meta["arms"]["h-health"].get("refused")
    tried = main_run.attempts("h-health", 0)
    assert tried["code run by the image's HEALTHCHECK"][0] == "ABSENT", tried
    assert ast.literal_eval(tried["foreign processes"][1]) == []
    assert main_run.record("h-health", 0).outcome == "ok"
    for path in (main_run.run_dir / "cells" / "h-health").glob("*/*/stdout"):
        assert b"hostile-healthcheck-resident" not in path.read_bytes(), path


def test_the_images_healthcheck_is_switched_off_and_guarded(main_run: MainRun) -> None:
    """The image does declare one (so the test above is not vacuous); the container is
    created with NONE, and guard `healthcheck` checked it."""
    world = main_run.world
    image_id = main_run.meta["arms"]["h-health"]["image_id"]
    declared = world.engine.inspect_image(image_id)["Config"]["Healthcheck"]
    assert declared["Test"] == ["CMD", "/usr/local/bin/hc"] and declared["Interval"] == 10**9
    folder = main_run.run_dir / "guards" / "h-health"
    inspect = json.loads((folder / "inspect.json").read_text())
    assert inspect["Config"]["Healthcheck"]["Test"] == ["NONE"]
    assert (inspect.get("State") or {}).get("Health") is None
    verdict = {r["guard"]: r for r in json.loads((folder / "verdict.json").read_text())}
    assert verdict["healthcheck"]["ok"] and verdict["healthcheck"]["found"] == ["NONE"]
