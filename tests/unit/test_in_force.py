"""The limits-in-force and tool-write guards are pure functions of the policy and the probe."""

from __future__ import annotations
from orchestrator.isolation import guards, in_force
from orchestrator.isolation.policy import GuardPolicy

import copy
from dataclasses import replace
from typing import Any

import pytest


VALUES = {"memory_bytes": 256 << 20, "pids": 100, "nano_cpus": 2_000_000_000,
          "tool_writable": ["/corpus", "/state", "/out", "/state/home"]}

# As the probe reported them on this machine's cgroup v1 (docker run --memory 256m
# --pids-limit 100 --cpus 2): without a cgroup namespace under runc, and gVisor's own view.
RUNC = {"version": "v1", "dirs": {"memory": "/sys/fs/cgroup/memory"},
        "memory_max": "268435456", "pids_max": "100", "cpu_quota": "200000",
        "cpu_period": "100000", "cpuset": "0-1", "cpuset_cpus": "0-1",
        "meminfo_total_kb": 24683772}
RUNSC = {"version": "v1", "dirs": {"memory": "/sys/fs/cgroup/memory"},
         "memory_max": "9223372036854775807", "pids_max": "max", "cpu_quota": "-1",
         "cpu_period": "100000", "cpuset": None, "cpuset_cpus": "0-1",
         "meminfo_total_kb": 262144}
V2 = {"version": "v2", "dirs": {"unified": "/sys/fs/cgroup"}, "memory_max": "268435456",
      "pids_max": "100", "cpu_max": "max 100000", "cpuset": "0-1", "meminfo_total_kb": 1}


def _written(*dirs: str, error: dict[str, str] | None = None) -> list[dict[str, Any]]:
    errors = error or {}
    return [{"path": f"{d}/{in_force.WRITE_PROBE}", "ok": d not in errors,
             "errno": 13 if d in errors else None, "error": errors.get(d)} for d in dirs]


def _facts(cgroup: dict[str, Any]) -> dict[str, Any]:
    return {"cgroup": copy.deepcopy(cgroup), "writable": _written(*VALUES["tool_writable"])}


def _checks(values: dict[str, Any], facts: dict[str, Any], gvisor: bool,
            kernel_is_gvisor: bool) -> list[Any]:
    return [*in_force.memory(values, facts, gvisor),
            *in_force.pids(values, facts, gvisor, kernel_is_gvisor),
            *in_force.cpus(values, facts), *in_force.writable(values, facts)]


def _verdict(facts: dict[str, Any], values: dict[str, Any] = VALUES, gvisor: bool = False,
             kernel_is_gvisor: bool = False) -> dict[str, tuple[Any, bool]]:
    return {guard: (found, ok) for guard, _, found, ok
            in _checks(values, facts, gvisor, kernel_is_gvisor)}


def _failed(verdict: dict[str, tuple[Any, bool]]) -> set[str]:
    return {guard for guard, (_, ok) in verdict.items() if not ok}


@pytest.mark.parametrize("cgroup", [RUNC, V2], ids=["v1", "v2"])
def test_limits_in_force_as_asked_pass(cgroup: dict[str, Any]) -> None:
    assert _failed(_verdict(_facts(cgroup))) == set()


@pytest.mark.parametrize(("key", "value", "guard"), [
    ("memory_max", "9223372036854771712", "memory_in_force"),  # v1's "no limit"
    ("memory_max", "536870912", "memory_in_force"),  # looser than asked
    ("memory_max", None, "memory_in_force"),  # unreadable
    ("pids_max", "max", "pids_in_force"),
    ("pids_max", "101", "pids_in_force"),
    ("pids_max", None, "pids_in_force"),
    ("cpu_quota", "300000", "cpus_in_force"),
])
def test_an_absent_or_looser_limit_is_refused_by_name(key: str, value: Any, guard: str) -> None:
    cgroup = {**RUNC, key: value}
    if key == "cpu_quota":
        cgroup.update(cpuset="0-3", cpuset_cpus="0-3")
    assert _failed(_verdict(_facts(cgroup))) == {guard}


def test_cpus_are_bounded_by_the_lower_of_quota_and_cpuset() -> None:
    unbounded_quota = {**RUNC, "cpu_quota": "-1"}
    assert _failed(_verdict(_facts(unbounded_quota))) == set()  # cpuset 0-1: 2 CPUs
    assert _failed(_verdict(_facts({**unbounded_quota, "cpuset": "0-3"}))) == {"cpus_in_force"}
    assert _failed(_verdict(_facts({**unbounded_quota, "cpuset": None, "cpuset_cpus": None}))) \
        == {"cpus_in_force"}
    assert _failed(_verdict(_facts({**V2, "cpu_max": "150000 100000", "cpuset": "0-7"}))) \
        == set()
    assert _failed(_verdict(_facts({**V2, "cpu_max": "300000 100000", "cpuset": None}))) \
        == {"cpus_in_force"}


@pytest.mark.parametrize(("cpus", "count"), [
    ("0-1", 2), ("0", 1), ("0-3,8,10-11", 7), ("", None), ("3-1", None), ("0-1\n", None),
    ("x", None), (None, None), ("0,", None)])
def test_a_cpuset_list_is_counted_or_refused(cpus: Any, count: int | None) -> None:
    assert in_force.cpu_count(cpus) == count


def test_under_gvisor_memtotal_stands_for_the_memory_limit() -> None:
    verdict = _verdict(_facts(RUNSC), gvisor=True, kernel_is_gvisor=True)
    assert _failed(verdict) == set()
    assert verdict["memory_in_force"][0].startswith("MemTotal 262144 kB")
    bigger = _facts({**RUNSC, "meminfo_total_kb": 262145})
    assert _failed(_verdict(bigger, gvisor=True, kernel_is_gvisor=True)) == {"memory_in_force"}
    # The same view under runc is no limit at all.
    assert _failed(_verdict(_facts(RUNSC))) == {"memory_in_force", "pids_in_force"}


def test_under_gvisor_the_pids_guard_needs_gvisors_kernel_and_its_controller() -> None:
    assert _failed(_verdict(_facts(RUNSC), gvisor=True)) == {"pids_in_force"}
    unread = _facts({**RUNSC, "pids_max": None})
    assert _failed(_verdict(unread, gvisor=True, kernel_is_gvisor=True)) == {"pids_in_force"}


def test_a_place_the_tool_cannot_write_is_named_with_its_error() -> None:
    facts = _facts(RUNC)
    facts["writable"] = _written("/corpus", "/state", "/out", "/state/home",
                                 error={"/state": "open: EACCES: Permission denied"})
    verdict = _verdict(facts)
    assert _failed(verdict) == {"tool_writable"}
    assert verdict["tool_writable"][0] == {"/state": "open: EACCES: Permission denied"}
    facts["writable"] = _written("/corpus", "/state")  # /out and HOME never tried
    assert _verdict(facts)["tool_writable"][0] == {"/out": "not tried",
                                                   "/state/home": "not tried"}
    facts["writable"] = _written(*VALUES["tool_writable"])
    facts["writable"][2]["error"] = "unlink: EACCES: Permission denied"  # created, not removed
    assert _failed(_verdict(facts)) == {"tool_writable"}


def test_no_probe_fails_every_guard_closed() -> None:
    assert _failed(_verdict({})) == {"memory_in_force", "pids_in_force", "cpus_in_force",
                                     "tool_writable"}


def test_a_run_recorded_before_is_judged_as_before() -> None:
    """A stored policy without tool_writable carries none of these guards, in audit too."""
    old = {k: v for k, v in VALUES.items() if k != "tool_writable"}
    assert _checks(old, {}, False, False) == []
    policy = GuardPolicy(
        run_id="r", arm="rg", image_id="sha256:" + "a" * 64, user="65532:65532", env=[],
        mounts=[], values=old)
    names = {r.guard for r in guards.check_inside(policy, {})}
    assert not names & set(in_force.UNDER_GVISOR)
    now = replace(policy, values=VALUES)
    assert set(in_force.UNDER_GVISOR) <= {r.guard for r in guards.check_inside(now, {})}
