"""An engine of another host: a second dockerd here, reached only over tcp:// with mutual
TLS, so sandbench treats it as another host's (nothing of this host can be mounted there).
The arms placed on it run on file systems, a corpus copy and a helper made through that
engine alone, pass every guard there, and grade exactly as on the local engine; lost mid-arm,
its arm resumes here, its set-up built again on the new file systems."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.second_engine import SecondEngine, second_dockerd
from orchestrator import corpus
from orchestrator.sandbox import remote
from orchestrator.engine import Engine, engine_address
from orchestrator.errors import SandbenchError
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import grades_and_bytes

pytestmark = pytest.mark.integration

# Placed in this order on the engines given: rg here, ctags (an index built at set-up) there.
ARMS = ["rg", "ctags"]


@pytest.fixture
def tls_engine(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[SecondEngine]:
    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("openssl") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root with Debian's docker.io (dockerd) and openssl")
        pytest.skip("a second dockerd needs root, dockerd and openssl")
    with second_dockerd(tls=True) as daemon:
        assert daemon.certs is not None
        monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
        monkeypatch.setenv("DOCKER_CERT_PATH", str(daemon.certs))
        yield daemon
    # No loop device is left backed by an image of the engine's, now deleted.
    attached = subprocess.run(["losetup", "--list", "-n", "-O", "NAME,BACK-FILE"],
                              capture_output=True, text=True, check=True).stdout
    assert "(deleted)" not in attached, attached


def test_arms_on_an_engine_of_another_host_run_on_its_own_files_and_grade_the_same(
        engine: Engine, bench: Settings, tls_engine: SecondEngine) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    local = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), [pool.one(engine)])

    members = pool.connect([engine_address(), str(tls_engine.tcp_url)])
    far = members[1]
    assert not far.local and far.facts["on_this_host"] is False
    spread = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), members)

    meta = json.loads((spread / "run.json").read_text())
    assert meta["status"] == "complete"
    remote_arms = [a for a in ARMS if meta["arms"][a]["engine"] == far.id]
    assert remote_arms, "no arm was placed on the engine of another host"
    assert meta["engines"][far.id]["refused"] is None
    for arm in remote_arms:
        # Nothing of the arm's is on this host: its file systems are that engine's volumes,
        # the helper that host's file, each checked outside and inside.
        assert not (spread / "work" / arm).exists()
        verdict = json.loads((spread / "guards" / arm / "verdict.json").read_text())
        assert [g["guard"] for g in verdict if not g["ok"]] == []
        # ... among them the bound of every file system, seen from inside.
        assert {g["guard"] for g in verdict} >= {"mounts", "mount_sizes", "helper_digest"}
        policy = json.loads((spread / "guards" / arm / "policy.json").read_text())
        assert {m["target"]: m["source"] for m in policy["mounts"] if m.get("volume")} == {
            f"/{n}": remote.volume_name(meta["run_id"], arm, n)
            for n in ("corpus", "state", "out")}
        assert policy["helper"]["source"].startswith(str(tls_engine.root / "data" / "volumes"))
        host = json.loads((spread / "guards" / arm / "host.json").read_text())
        assert host["helper"]["sha256"] == policy["helper"]["sha256"]
        state = json.loads((spread / "arms" / arm / "state.json").read_text())
        assert state["corpus_changes"] == []  # the copy there was the pristine, index fresh
    # Between arms the file systems are detached and their volumes gone; the images stay
    # in the run's work volume there.
    far_engine = Engine.connect(address=str(tls_engine.tcp_url))
    names = {v["Name"] for v in far_engine.list_volumes(f"sandbench.run={meta['run_id']}")}
    assert names == {f"sandbench-work-{meta['run_id']}"}
    assert _loop_devices_on(tls_engine.root) == []
    assert grades_and_bytes(spread, bench) == grades_and_bytes(local, bench)


def test_an_engine_of_another_host_lost_mid_arm_resumes_here_with_its_setup_built_again(
        engine: Engine, bench: Settings, tls_engine: SecondEngine) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    local = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), [pool.one(engine)])
    members = pool.connect([engine_address(), str(tls_engine.tcp_url)])
    far = members[1].id
    seen: list[str] = []

    def lose_the_far_engine(arm: str, cell: str, outcome: str) -> None:
        meta = json.loads((run_dir() / "run.json").read_text())
        if meta["arms"][arm].get("engine") == far:
            seen.append(cell)
            if len(seen) == 4:
                tls_engine.kill()

    def run_dir() -> Path:
        return next(p for p in bench.runs_dir.glob("run-demo-*") if p != local)

    with pytest.raises(SandbenchError):
        runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), members,
                   progress=lose_the_far_engine)
    assert seen[0] == "_setup" and len(seen) >= 4
    spread = run_dir()
    resumed = runner.run(bench, RunOptions("demo", arms=tuple(ARMS), resume=spread),
                         pool.connect([engine_address()]))
    meta = json.loads((resumed / "run.json").read_text())
    assert meta["status"] == "complete"
    moved = [a for a in ARMS if meta["arms"][a]["engine"] != far]
    assert moved == ARMS
    setup = json.loads((resumed / "cells" / "ctags" / "_setup" / "record.json").read_text())
    assert setup["engine"] == members[0].id  # built again here, on the new file systems
    assert grades_and_bytes(resumed, bench) == grades_and_bytes(local, bench)
    # The lost engine could not detach its arm's devices: they are still attached (the
    # fixture detaches them, and checks that none is left).
    assert _loop_devices_on(tls_engine.root)


def _loop_devices_on(root: Path) -> list[str]:
    """Loop devices of this machine backed by an image in that engine's volumes."""
    images = {(os.stat(f).st_dev, os.stat(f).st_ino)
              for f in (root / "data" / "volumes").glob("*/_data/*/*.ext4")}
    listed = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                            capture_output=True, text=True, check=True)
    found = []
    for device in json.loads(listed.stdout or "{}").get("loopdevices") or []:
        major, minor = (int(x) for x in str(device["back-maj:min"]).split(":"))
        if (os.makedev(major, minor), int(device["back-ino"] or 0)) in images:
            found.append(device["name"])
    return found
