"""The sandbox against the real engine: every guard in every image, refusals named, and
complete transcripts for exits, timeouts, OOM kills and floods."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images
from orchestrator.sandbox import cleanup
from orchestrator.engine import Engine
from orchestrator.errors import GuardViolation
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import (DOCKER_EXEC, MIB, HelperFile, Limits, Mount, SandboxSpec,
                                      default_user)
from orchestrator.settings import Settings
from orchestrator.isolation import guards
from orchestrator.isolation.values import HELPER_IDLE

pytestmark = pytest.mark.integration


def _spec(settings: Settings, image: str, tmp_path: Path, **limits: int) -> SandboxSpec:
    lock = images.ImageLock.load(settings.images_lock)
    user = default_user()
    mounts = [Mount(tmp_path / name, f"/{name}") for name in ("corpus", "state", "out")]
    return SandboxSpec(run_id=f"test-{tmp_path.name}"[:60], arm=image,
                       image_id=lock.image_id(image), tool_version="test", user=user,
                       env={"HOME": "/state"}, helper=HelperFile(*lock.helper()),
                       mounts=tuple(mounts),
                       limits=dataclasses.replace(Limits(), **limits), workdir="/corpus")


@dataclasses.dataclass(frozen=True)
class Loosened(SandboxSpec):
    """A spec with one engine setting overridden: what the verifier must refuse."""

    override: tuple[tuple[str, Any], ...] = ()

    def create_kwargs(self) -> dict[str, Any]:
        return {**super().create_kwargs(), **dict(self.override)}


@pytest.mark.parametrize("image", ["base", "rg", "ast-grep", "code-review-graph", "probe"])
def test_every_guard_holds_in_every_image(engine: Engine, bench: Settings, tmp_path: Path,
                                          image: str) -> None:
    with Sandbox(engine, _spec(bench, image, tmp_path)) as box:
        results = box.verify(tmp_path / "guards" / image)
    assert not guards.failures(results)
    assert {r.side for r in results} == {"outside", "inside"}
    (audited,) = guards.audit(tmp_path)
    assert audited.ok, [r for r in audited.results if not r.ok]


@pytest.mark.parametrize(("override", "guard"), [
    (("network_mode", "bridge"), "network_mode"),
    (("read_only", False), "read_only_root"),
    # PID 1 as the tool's uid: nothing then keeps a same-uid tool from PID 1 under gVisor.
    (("user", "65532:65532"), "user"),
    (("cap_add", ["SETUID", "SETGID", "KILL"]), "cap_add"),
    # The resident executor without its channel: PID 1 would read no request at all.
    (("stdin_open", False), "exec_channel"),
    (("tty", True), "exec_channel"),
])
def test_a_loosened_container_is_refused_naming_the_guard(engine: Engine, bench: Settings,
                                                          tmp_path: Path, override, guard) -> None:
    spec = Loosened(**{f.name: getattr(_spec(bench, "rg", tmp_path), f.name)
                       for f in dataclasses.fields(SandboxSpec)}, override=(override,))
    with Sandbox(engine, spec) as box, pytest.raises(GuardViolation) as err:
        box.verify(tmp_path / "guards" / "rg")
    assert guard in err.value.why
    assert guard in {f.guard for f in err.value.data["failures"]}
    # Fail closed: nothing was executed inside a container that failed from outside.
    assert not (tmp_path / "guards" / "rg" / "probe.json").exists()


def test_a_command_gets_a_complete_transcript(engine: Engine, bench: Settings,
                                              tmp_path: Path) -> None:
    script = "printf 'out\\377\\000'; printf 'err' >&2; exit 3"
    with Sandbox(engine, _spec(bench, "rg", tmp_path)) as box:
        record = box.exec(["sh", "-c", script], tmp_path / "cell")
    assert record.outcome == "nonzero-exit" and record.exit["exit_code"] == 3
    assert (tmp_path / "cell" / "stdout").read_bytes() == b"out\xff\x00"
    assert (tmp_path / "cell" / "stderr").read_bytes() == b"err"
    assert record.stdout.sha256 == hashlib.sha256(b"out\xff\x00").hexdigest()
    assert 0 < record.timing["wall_ns"] <= record.timing["host_bracket_ns"]
    assert record.flags == []
    on_disk = json.loads((tmp_path / "cell" / "record.json").read_text())
    assert on_disk["argv"] == ["sh", "-c", script] and on_disk["env"] == {"HOME": "/state"}
    assert on_disk["image_id"] == record.image_id


def test_timeout_oom_and_flood_are_told_apart(engine: Engine, bench: Settings,
                                              tmp_path: Path) -> None:
    with Sandbox(engine, _spec(bench, "probe", tmp_path, memory_bytes=256 * MIB)) as box:
        slow = box.exec(["sh", "-c", "trap '' TERM; sleep 60"], tmp_path / "slow",
                        timeout_s=1, grace_s=0.5)
        fill = "b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])"
        hog = box.exec(["python3", "-c", fill],
                       tmp_path / "hog")
        flood = box.exec(["head", "-c", str(5_000_000), "/dev/zero"], tmp_path / "flood",
                         cap_bytes=MIB)
        missing = box.exec(["no-such-tool"], tmp_path / "missing")
    assert slow.outcome == "timeout" and slow.exit["timed_out"]
    assert 1.0 <= slow.timing["wall_ns"] / 1e9 < 10
    assert hog.outcome == "oom" and hog.exit["oom_killed"]
    assert flood.outcome == "ok" and flood.stdout.truncated
    assert flood.stdout.bytes_total == 5_000_000 and flood.stdout.bytes_kept == MIB
    assert (tmp_path / "flood" / "stdout").stat().st_size == MIB
    assert missing.outcome == "spawn-error"


def test_the_docker_exec_fallback_holds_every_guard(engine: Engine, bench: Settings,
                                                    tmp_path: Path) -> None:
    spec = dataclasses.replace(_spec(bench, "rg", tmp_path), exec_path=DOCKER_EXEC)
    with Sandbox(engine, spec) as box:
        results = {r.guard: r for r in box.verify(tmp_path / "guards" / "rg")}
    assert not guards.failures(list(results.values()))
    assert results["pid1"].expected.startswith(HELPER_IDLE)
    assert results["exec_channel"].found == {"open_stdin": False, "stdin_once": False,
                                             "tty": False}
    assert results["channel_private"].ok


PARITY = "echo out; echo err >&2; id -u; id -g; pwd; env | sort; exit 3"


def test_both_exec_paths_make_the_same_record(engine: Engine, bench: Settings,
                                              tmp_path: Path) -> None:
    """The same commands through the resident channel and through docker exec: the tool
    sees the same uid, directory and environment, and the records differ in nothing but
    their declared exec_path and what a run cannot repeat (ids, times, container)."""
    records, seen = {}, {}
    for path in ("resident", DOCKER_EXEC):
        spec = dataclasses.replace(_spec(bench, "rg", tmp_path / path), exec_path=path)
        with Sandbox(engine, spec) as box:
            box.verify(tmp_path / path / "guards")
            first = box.exec(["sh", "-c", PARITY], tmp_path / path / "parity")
            # One process: a shell's child would die on its own schedule, and whether the
            # helper still finds it to kill (stray_killed) is a race, whatever the path.
            slow = box.exec(["sleep", "30"], tmp_path / path / "slow", timeout_s=0.5,
                            grace_s=0.2)
            flood = box.exec(["head", "-c", "3000000", "/dev/zero"], tmp_path / path / "flood",
                             cap_bytes=MIB)
        records[path] = [r.to_json() for r in (first, slow, flood)]
        seen[path] = (tmp_path / path / "parity" / "stdout").read_bytes()
    assert seen["resident"] == seen[DOCKER_EXEC]
    varying = {"run_id", "container_id", "started_at", "timing", "exec_path"}
    for resident, fallback in zip(records["resident"], records[DOCKER_EXEC], strict=True):
        assert resident.keys() == fallback.keys()
        assert resident["exec_path"] == "resident" and fallback["exec_path"] == DOCKER_EXEC
        same = {k: v for k, v in resident.items() if k not in varying}
        assert same == {k: v for k, v in fallback.items() if k not in varying}
        assert resident["timing"].keys() == fallback["timing"].keys()
    assert [r["outcome"] for r in records["resident"]] == ["nonzero-exit", "timeout", "ok"]


def test_cleanup_finds_a_left_behind_container_by_label(engine: Engine, bench: Settings,
                                                        tmp_path: Path) -> None:
    box = Sandbox(engine, _spec(bench, "rg", tmp_path))
    box.start()
    left = box.container_id
    try:
        found = cleanup.find(engine, run_id=box.spec.run_id)
        assert [f.id for f in found] == [left]
        assert cleanup.remove(engine, found) == found
        assert cleanup.find(engine, run_id=box.spec.run_id) == []
    finally:
        box.remove()
