"""The limits the cgroup applies and the tool's own writes, read from inside a real sandbox:
as asked under either runtime, and refused by name when the engine's answer would pass but
the kernel applies no limit, or the tool's uid cannot write its /state."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from orchestrator.sandbox import runtimes
from orchestrator.engine import Engine
from orchestrator.errors import GuardViolation
from orchestrator.sandbox.container import Sandbox
from orchestrator.settings import Settings
from orchestrator.isolation import guards
from orchestrator.isolation.policy import GuardResult
from tests.integration.test_sandbox import _spec

pytestmark = pytest.mark.integration

IN_FORCE = ("memory_in_force", "pids_in_force", "cpus_in_force", "tool_writable")


def _by_guard(results: list[GuardResult]) -> dict[str, GuardResult]:
    return {r.guard: r for r in results}


@pytest.mark.parametrize("runtime", runtimes.RUNTIMES)
def test_the_limits_read_in_force_are_the_arms(engine: Engine, bench: Settings, tmp_path: Path,
                                               runtime: str) -> None:
    spec = _spec(bench, "rg", tmp_path, memory_bytes=256 << 20, pids=100)
    with Sandbox(engine, dataclasses.replace(spec, runtime=runtime)) as box:
        results = _by_guard(box.verify(tmp_path / "guards" / "rg"))
    assert all(results[g].ok for g in IN_FORCE), [results[g] for g in IN_FORCE]
    if runtime == runtimes.RUNC:
        assert results["memory_in_force"].found == str(256 << 20)
        assert results["pids_in_force"].found == "100"
    else:  # gVisor's cgroupfs shows no limit: MemTotal stands for it (inside.UNDER_GVISOR)
        assert results["memory_in_force"].found.startswith(f"MemTotal {256 << 10} kB")
    assert results["cpus_in_force"].found.startswith("2 CPUs")
    assert results["tool_writable"].found == "written in ['/corpus', '/state', '/out']"
    (audited,) = guards.audit(tmp_path)
    assert audited.ok and audited.matches_stored


def _host_cgroup(engine: Engine, container_id: str, controller: str) -> Path:
    """The container's cgroup directory of a v1 controller, as this host mounts it."""
    pid = engine.inspect_container(container_id)["State"]["Pid"]
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return Path("/sys/fs/cgroup") / controller / path.lstrip("/")
    raise AssertionError(f"no {controller} cgroup for pid {pid}")


def test_limits_the_engine_reports_but_the_kernel_does_not_apply_are_refused(
        engine: Engine, bench: Settings, tmp_path: Path) -> None:
    """What a rootless engine on cgroup v1 does: it accepts the limits, its inspect shows
    them, and its cgroup applies none. Lifted here from the host, after the start."""
    if not Path("/sys/fs/cgroup/memory").is_dir() or os.geteuid() != 0:
        pytest.fail("this test lifts a cgroup v1 limit from the host: it needs root and v1")
    with Sandbox(engine, _spec(bench, "rg", tmp_path)) as box:
        memory = _host_cgroup(engine, box.require_id(), "memory")
        (memory / "memory.memsw.limit_in_bytes").write_text("-1")
        (memory / "memory.limit_in_bytes").write_text("-1")
        (_host_cgroup(engine, box.require_id(), "pids") / "pids.max").write_text("max")
        with pytest.raises(GuardViolation) as err:
            box.verify(tmp_path / "guards" / "rg")
    failed = _by_guard(err.value.data["failures"])
    assert set(failed) == {"memory_in_force", "pids_in_force"}
    assert failed["pids_in_force"].found == "max"
    assert int(failed["memory_in_force"].found) > 1 << 60  # v1's "no limit"
    outside = [r for r in guards.audit(tmp_path)[0].results if r.side == "outside"]
    assert not guards.failures(outside), "the engine's answer alone would have passed"


def test_a_state_the_tool_cannot_write_is_refused_before_any_cell(
        engine: Engine, bench: Settings, tmp_path: Path) -> None:
    """What an engine whose uid mapping gives /state to another uid looks like to the tool."""
    with Sandbox(engine, _spec(bench, "rg", tmp_path)) as box:
        state = tmp_path / "state"
        os.chown(state, 12345, 12345)
        state.chmod(0o755)
        with pytest.raises(GuardViolation) as err:
            box.verify(tmp_path / "guards" / "rg")
    failed = _by_guard(err.value.data["failures"])
    assert set(failed) == {"tool_writable"}
    assert failed["tool_writable"].found == {"/state": "open: EACCES: Permission denied"}
