"""What an engine's `docker info` says of the limits it enforces, and the refusal (or the
accepted deviation) that follows: decided from the engine's own answers, before any
container starts."""

from __future__ import annotations

from typing import Any

from orchestrator.sandbox import engine_limits, userns
from orchestrator.run.document import EngineRecord

ROOTLESS_V1_WARNING = ("WARNING: Running in rootless-mode without cgroups. To enable cgroups "
                       "in rootless-mode, you need to boot the system in cgroup v2 mode.")
# `docker info` of Debian 12's docker.io 20.10, as root and as a user's rootless engine.
ROOTFUL = {"CgroupVersion": "1", "CgroupDriver": "cgroupfs", "MemoryLimit": True,
           "PidsLimit": True, "CpuCfsQuota": True, "Warnings": ["WARNING: No swap limit support"],
           "SecurityOptions": ["name=seccomp,profile=default"]}
ROOTLESS_V1 = {"CgroupVersion": "1", "CgroupDriver": "none", "MemoryLimit": False,
               "PidsLimit": False, "CpuCfsQuota": False, "Warnings": [ROOTLESS_V1_WARNING],
               "SecurityOptions": ["name=seccomp,profile=default", "name=rootless"]}
# cgroup v2 with only cpu delegated to the user: systemd drives it, memory and pids are not.
ROOTLESS_V2_UNDELEGATED = {"CgroupVersion": "2", "CgroupDriver": "systemd",
                           "MemoryLimit": False, "PidsLimit": False, "CpuCfsQuota": True,
                           "Warnings": ["WARNING: No memory limit support",
                                        "WARNING: No pids limit support"],
                           "SecurityOptions": ["name=rootless", "name=cgroupns"]}


def _engine(info: dict[str, Any]) -> dict[str, Any]:
    return {"id": "engine-abc", "rootless": userns.rootless(info),
            "limits": engine_limits.facts(info)}


def test_a_rootful_engine_enforces_every_limit_and_nothing_is_refused() -> None:
    engine = _engine(ROOTFUL)
    assert engine["limits"] == {"cgroup_version": "1", "cgroup_driver": "cgroupfs",
                                "memory": True, "pids": True, "cpu": True, "warnings": []}
    assert engine_limits.unenforced(engine["limits"]) == []
    assert engine_limits.refusal(engine, accepted=False) is None
    assert not userns.rootless(ROOTFUL) and not userns.remaps(ROOTFUL)


def test_rootless_on_cgroup_v1_is_refused_by_name_with_expected_found_and_the_fix() -> None:
    engine = _engine(ROOTLESS_V1)
    assert userns.rootless(ROOTLESS_V1) and userns.remaps(ROOTLESS_V1)
    assert engine_limits.unenforced(engine["limits"]) == ["memory", "pids", "cpu"]
    why = engine_limits.refusal(engine, accepted=False)
    assert why == (
        "engine_limits: expected memory, pids and cpu limits enforced by the engine's cgroups, "
        "found a rootless engine on cgroup v1 with cgroup driver none that enforces no memory, "
        f"pids, cpu limit ({ROOTLESS_V1_WARNING}); fix: {engine_limits.FIX}")
    assert "Delegate=memory pids cpu" in engine_limits.FIX and "rootful" in engine_limits.FIX
    assert engine_limits.refusal(engine, accepted=True) is None


def test_cgroup_v2_without_delegated_controllers_names_only_what_is_missing() -> None:
    engine = _engine(ROOTLESS_V2_UNDELEGATED)
    assert engine_limits.unenforced(engine["limits"]) == ["memory", "pids"]
    why = engine_limits.refusal(engine, accepted=False)
    assert why is not None and "cgroup v2 with cgroup driver systemd that enforces no " \
        "memory, pids limit (WARNING: No memory limit support; WARNING: No pids limit " \
        "support)" in why


def test_a_driver_none_enforces_nothing_whatever_its_booleans_say() -> None:
    claims = {**ROOTLESS_V1, "MemoryLimit": True, "PidsLimit": True, "CpuCfsQuota": True}
    assert engine_limits.unenforced(engine_limits.facts(claims)) == ["memory", "pids", "cpu"]


def test_warnings_kept_are_the_limits_ones_bounded_in_number_and_length() -> None:
    info = {**ROOTLESS_V1, "Warnings": ["WARNING: bridge-nf-call-iptables is disabled",
                                        *["cgroup " + "x" * 1000] * 20]}
    kept = engine_limits.facts(info)["warnings"]
    assert len(kept) == engine_limits.WARNINGS_KEPT
    assert all(len(w) == engine_limits.WARNING_CHARS and w.startswith("cgroup") for w in kept)


def test_a_refusal_escapes_what_the_engine_said() -> None:
    why = engine_limits.refusal(_engine({**ROOTLESS_V1, "Warnings": ["cgroup \x1b[2J\nnone"]}),
                                accepted=False)
    assert why is not None and "\x1b" not in why and "\n" not in why


def test_an_accepted_run_records_one_deviation_per_engine_once() -> None:
    deviations: list[str] = []
    engines = [_engine(ROOTLESS_V1), _engine(ROOTLESS_V1), {**_engine(ROOTFUL), "id": "e2"}]
    engine_limits.note_accepted(deviations, engines)
    engine_limits.note_accepted(deviations, engines)  # a resume
    assert deviations == [
        "engine engine-abc is a rootless engine on cgroup v1 with cgroup driver none that "
        f"enforces no memory, pids, cpu limit ({ROOTLESS_V1_WARNING}): the user accepted "
        "unbounded limits (--accept-unbounded-limits), so its arms ran without their declared "
        "memory, pids, cpu limits"]


def test_an_engine_recorded_before_limits_were_is_neither_refused_nor_rewritten() -> None:
    assert engine_limits.refusal({"id": "old"}, accepted=False) is None
    facts = {"id": "e", "url": "unix:///x", "version": "20.10", "api_version": "1.41",
             "kernel": "6", "os": "linux", "arch": "x86_64", "cores": 2, "memory_bytes": 1,
             "storage_driver": "overlay2", "security_options": [], "on_this_host": True}
    assert EngineRecord.from_facts(facts).to_json() == facts
    now = {**facts, "userns": {"remap": True}, "rootless": True,
           "limits": engine_limits.facts(ROOTLESS_V1)}
    assert EngineRecord.from_facts(now).to_json() == now
