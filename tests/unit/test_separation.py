"""The split uids as the guards judge them: PID 1 the container's uid 0 with SETUID and
SETGID only, the tool another uid with nothing, proved from the tool's side."""

from __future__ import annotations
from orchestrator.isolation import guards, separation
from orchestrator.isolation.policy import GuardResult

import copy
from dataclasses import replace
from typing import Any

import pytest

from tests.unit.test_guards import HOST, INSPECT, POLICY, PROBE

SPLIT = replace(POLICY, values={**POLICY.values, "executor_user": "0:0"})
EXECUTOR_SET = "00000000000000c0"

SPLIT_PROBE = copy.deepcopy(PROBE)
SPLIT_PROBE["facts"]["status"]["CapBnd"] = EXECUTOR_SET
SPLIT_PROBE["facts"].update(
    no_new_privs=1,
    pid1_status={"CapInh": "0000000000000000", "CapPrm": EXECUTOR_SET, "CapEff": EXECUTOR_SET,
                 "CapBnd": EXECUTOR_SET, "CapAmb": "0000000000000000", "Uid": "0 0 0 0",
                 "Gid": "0 0 0 0", "NoNewPrivs": 1, "Seccomp": 2},
    pid1_signal="kill: EPERM: Operation not permitted",
    pid1_environ="open: EACCES: Permission denied",
    pid1_fd_opens={"listing": "opendir: EACCES: Permission denied", "tried": 16, "opened": []})

SPLIT_INSPECT = copy.deepcopy(INSPECT)
SPLIT_INSPECT["Config"]["User"] = "0:0"
SPLIT_INSPECT["HostConfig"]["CapAdd"] = ["CAP_SETGID", "CAP_SETUID"]


def _failed(results: list[GuardResult]) -> dict[str, GuardResult]:
    return {r.guard: r for r in results if not r.ok}


def test_a_split_sandbox_passes_every_guard() -> None:
    assert _failed(guards.check_outside(SPLIT, SPLIT_INSPECT, HOST)) == {}
    inside = guards.check_inside(SPLIT, SPLIT_PROBE)
    assert _failed(inside) == {}
    assert set(separation.UNDER_GVISOR) <= {r.guard for r in inside}


def test_gvisor_reading_zeros_from_pid_1s_environment_passes() -> None:
    probe = copy.deepcopy(SPLIT_PROBE)
    probe["facts"]["pid1_environ"] = "312 bytes read, 0 not zero"
    probe["facts"]["pid1_fd_opens"] = {"listing": "listed", "tried": 5, "opened": []}
    assert _failed(guards.check_inside(SPLIT, probe)) == {}


@pytest.mark.parametrize(("mutate", "guard"), [
    (lambda f: f["status"].update(CapPrm="0000000000000080"), "tool_capabilities"),
    (lambda f: f["status"].update(CapInh="0000000000000040"), "tool_capabilities"),
    (lambda f: f["status"].update(CapBnd="0000000000000000"), "cap_bnd"),
    (lambda f: f["status"].update(CapBnd="000001ffffffffff"), "cap_bnd"),
    (lambda f: f["pid1_status"].update(Uid="65532 65532 65532 65532"), "executor_uid"),
    (lambda f: f["pid1_status"].update(Uid="0 65532 0 65532"), "executor_uid"),
    (lambda f: f.pop("pid1_status"), "executor_uid"),
    (lambda f: f["pid1_status"].update(CapEff="000001ffffffffff"), "executor_capabilities"),
    (lambda f: f["pid1_status"].update(CapAmb=EXECUTOR_SET), "executor_capabilities"),
    (lambda f: f["pid1_status"].update(CapBnd="000001ffffffffff"), "executor_capabilities"),
    (lambda f: f.update(pid1_signal="permitted"), "executor_signal"),
    (lambda f: f.update(pid1_signal="kill: ESRCH: No such process"), "executor_signal"),
    (lambda f: f.update(pid1_environ="312 bytes read, 40 not zero"), "executor_environ"),
    (lambda f: f.pop("pid1_environ"), "executor_environ"),
    (lambda f: f["pid1_fd_opens"].update(opened=["1 write"]), "executor_fds"),
    (lambda f: f["pid1_fd_opens"].update(tried=0), "executor_fds"),
    (lambda f: f.pop("pid1_fd_opens"), "executor_fds"),
])
def test_each_separation_guard_names_itself(mutate: Any, guard: str) -> None:
    probe = copy.deepcopy(SPLIT_PROBE)
    mutate(probe["facts"])
    assert guard in _failed(guards.check_inside(SPLIT, probe))


def test_the_tool_must_not_run_as_the_executors_uid() -> None:
    probe = copy.deepcopy(SPLIT_PROBE)
    probe["facts"]["uid"] = 0
    assert {"uid", "executor_uid"} <= set(_failed(guards.check_inside(SPLIT, probe)))


@pytest.mark.parametrize(("change", "guard"), [
    (lambda i: i["Config"].update(User="65532:65532"), "user"),
    (lambda i: i["HostConfig"].update(CapAdd=None), "cap_add"),
    (lambda i: i["HostConfig"].update(CapAdd=["CAP_SETUID", "CAP_SETGID", "CAP_KILL"]),
     "cap_add"),
])
def test_the_executor_is_checked_from_outside(change: Any, guard: str) -> None:
    inspect = copy.deepcopy(SPLIT_INSPECT)
    change(inspect)
    assert guard in _failed(guards.check_outside(SPLIT, inspect, HOST))


def test_a_tool_user_of_root_is_refused_even_when_the_container_user_is_right() -> None:
    policy = replace(SPLIT, user="0:0")
    assert "user" in _failed(guards.check_outside(policy, SPLIT_INSPECT, HOST))


def test_a_run_recorded_before_the_split_is_judged_as_it_was() -> None:
    """No executor_user: one uid, no capability added, no separation guard; its stored
    verdict recomputes the same."""
    assert _failed(guards.check_outside(POLICY, INSPECT, HOST)) == {}
    names = {r.guard for r in guards.check_inside(POLICY, PROBE)}
    assert not names & set(separation.UNDER_GVISOR)
    assert "cap_bnd" not in _failed(guards.check_inside(POLICY, PROBE))


def test_no_new_privs_under_gvisor_without_its_line_is_read_by_prctl() -> None:
    policy = replace(SPLIT, values={**SPLIT.values, "runtime": "runsc"})
    probe = copy.deepcopy(SPLIT_PROBE)
    del probe["facts"]["status"]["NoNewPrivs"]
    result = {r.guard: r for r in guards.check_inside(policy, probe)}["no_new_privs"]
    assert result.ok
    probe["facts"]["no_new_privs"] = 0
    result = {r.guard: r for r in guards.check_inside(policy, probe)}["no_new_privs"]
    assert not result.ok


def test_seccomp_under_runsc_since_the_split_is_mode_0_and_under_runc_mode_2() -> None:
    """runsc runs without --oci-seccomp now (its clone3 answer breaks glibc threads): the
    engine's profile is not in force inside gVisor, and the guard says so exactly."""
    under_runsc = replace(SPLIT, values={**SPLIT.values, "runtime": "runsc"})
    probe = copy.deepcopy(SPLIT_PROBE)
    probe["facts"]["status"]["Seccomp"] = 0
    seccomp = {r.guard: r for r in guards.check_inside(under_runsc, probe)}["seccomp"]
    assert seccomp.ok and seccomp.expected == 0
    assert not {r.guard: r for r in guards.check_inside(SPLIT, probe)}["seccomp"].ok
    legacy = replace(POLICY, values={**POLICY.values, "runtime": "runsc"})
    assert {r.guard: r for r in guards.check_inside(legacy, PROBE)}["seccomp"].expected == 2
