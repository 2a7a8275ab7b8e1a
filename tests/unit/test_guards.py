"""The guard checks are pure functions of a policy and two snapshots."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from orchestrator.sandbox import canary as canary_mod
from orchestrator.errors import InputError
from orchestrator.isolation import guards
from orchestrator.isolation.policy import DeclaredMount, GuardPolicy, GuardResult

POLICY = GuardPolicy(
    run_id="r1", arm="rg", image_id="sha256:" + "a" * 64, user="65532:65532",
    env=["HOME=/state/home", "PATH=/usr/bin:/bin"],
    mounts=[DeclaredMount("/bench/w/corpus", "/corpus", False, 64 << 20),
            DeclaredMount("/bench/w/state", "/state", False, 32 << 20)],
    labels={"sandbench.run": "r1", "sandbench.arm": "rg"},
    helper={"source": "/bench/helper/sandbench-exec-c0ffee", "sha256": "c" * 64},
    values={"tmpfs": {"/tmp": "rw,nosuid,nodev,size=536870912,mode=1777"},
            "memory_bytes": 4 << 30, "pids": 512, "nano_cpus": 2_000_000_000})

HOST = guards.helper_facts(Path("/bench/helper/sandbench-exec-c0ffee"), "c" * 64, None)

INSPECT = {
    "Image": POLICY.image_id,
    "Config": {"User": "65532:65532", "Env": ["PATH=/usr/bin:/bin", "HOME=/state/home"],
               "Labels": {"sandbench.run": "r1", "sandbench.arm": "rg"},
               "Healthcheck": {"Test": ["NONE"]},
               "Cmd": ["/.sandbench/sandbench-exec", "idle"], "Entrypoint": None},
    "HostConfig": {"NetworkMode": "none", "Privileged": False, "CapDrop": ["ALL"],
                   "CapAdd": None, "ReadonlyRootfs": True,
                   "SecurityOpt": ["no-new-privileges:true"], "Memory": 4 << 30,
                   "MemorySwap": 4 << 30, "PidsLimit": 512, "NanoCpus": 2_000_000_000,
                   "Init": False, "Tmpfs": dict(POLICY.tmpfs), "Devices": [],
                   "PidMode": "", "IpcMode": "private", "LogConfig": {"Type": "none"}},
    "Mounts": [{"Type": "bind", "Source": "/bench/w/corpus", "Destination": "/corpus",
                "RW": True},
               {"Type": "bind", "Source": "/bench/w/state", "Destination": "/state",
                "RW": True},
               {"Type": "bind", "Source": "/bench/helper/sandbench-exec-c0ffee",
                "Destination": "/.sandbench/sandbench-exec", "RW": False}],
    "NetworkSettings": {"Networks": {"none": {}}},
}


def _mount(point: str, options: str = "rw", size: int = 1 << 40) -> dict[str, Any]:
    return {"mount_point": point, "fstype": "x", "source": "x", "options": options,
            "super_options": "rw", "size_bytes": size}


PROBE = {
    "facts": {
        "uid": 65532, "gid": 65532, "groups": [],
        "status": {"CapInh": "0000000000000000", "CapPrm": "0000000000000000",
                   "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
                   "CapAmb": "0000000000000000", "NoNewPrivs": 1, "Seccomp": 2},
        "interfaces": ["lo"], "routes_v4": [],
        "routes_v6": ["00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
                      "00000000000000000000000000000000 00000000 00000002 00000000 80200001 lo"],
        "lookup": {"name": "example.com", "ok": False, "error": "Temporary failure"},
        "connect": {"host": "127.0.0.1", "port": 4000, "ok": False, "errno": 111,
                    "error": "Connection refused"},
        "udp": {"host": "127.0.0.1", "port": 4000, "ok": True, "errno": 0, "error": None},
        "write": {"path": "/.x", "ok": False, "errno": 30, "error": "Read-only file system"},
        "mounts": [_mount("/", "ro,relatime"), _mount("/proc"), _mount("/dev"),
                   _mount("/sys", "ro"), _mount("/etc/hosts"),
                   _mount("/proc/kcore", "ro"), _mount("/corpus", size=60 << 20),
                   _mount("/state", size=30 << 20), _mount("/tmp", "rw,nosuid,nodev"),
                   _mount("/.sandbench/sandbench-exec", "ro,relatime")],
        "image_helpers": [],
    },
    "canary": {"port": 4000, "tcp_accepted": 0, "udp_received": 0},
}


def _failed(results: list[GuardResult]) -> dict[str, GuardResult]:
    return {r.guard: r for r in guards.failures(results)}


def test_a_hardened_container_passes_every_guard() -> None:
    assert _failed(guards.check_outside(POLICY, INSPECT, HOST)) == {}
    assert _failed(guards.check_inside(POLICY, PROBE)) == {}


@pytest.mark.parametrize(("path", "value", "guard"), [
    (("HostConfig", "NetworkMode"), "bridge", "network_mode"),
    (("HostConfig", "ReadonlyRootfs"), False, "read_only_root"),
    (("Config", "User"), "0:0", "user"),
    (("HostConfig", "Privileged"), True, "privileged"),
    (("HostConfig", "CapAdd"), ["SYS_ADMIN"], "cap_add"),
    (("HostConfig", "SecurityOpt"), [], "no_new_privileges"),
    (("HostConfig", "PidsLimit"), None, "pids_limit"),
    (("HostConfig", "Memory"), 0, "memory_bytes"),
    (("HostConfig", "PidMode"), "host", "host_namespaces"),
    (("Image"), "sha256:" + "b" * 64, "image_id"),
    (("HostConfig", "SecurityOpt"), ["no-new-privileges:true", "seccomp=unconfined"],
     "confinement"),
    (("HostConfig", "LogConfig"), {"Type": "json-file"}, "log_driver"),
    (("HostConfig", "Init"), True, "pid1"),
    (("Config", "Healthcheck"), {"Test": ["CMD", "x"]}, "healthcheck"),
    # The image's own copy as PID 1 (the old place): only the mounted helper may be.
    (("Config", "Cmd"), ["/usr/local/bin/sandbench-exec", "idle"], "pid1"),
])
def test_each_outside_guard_names_itself(path: tuple[str, ...] | str, value: object,
                                         guard: str) -> None:
    inspect = copy.deepcopy(INSPECT)
    if isinstance(path, str):
        inspect[path] = value
    else:
        inspect[path[0]][path[1]] = value
    failed = _failed(guards.check_outside(POLICY, inspect, HOST))
    assert set(failed) == {guard}


@pytest.mark.parametrize(("change", "guards_failed"), [
    # Mounted writable, from another file, or not at all: the mount list fails too.
    ({"RW": True}, {"helper_mount", "mounts"}),
    ({"Source": "/bench/helper/other"}, {"helper_mount", "mounts"}),
    ({"Destination": "/usr/local/bin/sandbench-exec"}, {"helper_mount", "mounts"}),
])
def test_the_helper_mount_is_the_locked_file_read_only_at_its_path(change, guards_failed
                                                                   ) -> None:
    inspect = copy.deepcopy(INSPECT)
    inspect["Mounts"][2].update(change)
    failed = _failed(guards.check_outside(POLICY, inspect, HOST))
    assert set(failed) == guards_failed
    assert failed["helper_mount"].expected == {
        "source": "/bench/helper/sandbench-exec-c0ffee",
        "target": "/.sandbench/sandbench-exec", "read_only": True}


@pytest.mark.parametrize(("host", "found"), [
    (guards.helper_facts(Path("/bench/helper/sandbench-exec-c0ffee"), "d" * 64, None), "d" * 64),
    (guards.helper_facts(Path("/bench/helper/sandbench-exec-c0ffee"), None,
                         "ENOENT: No such file or directory"), "ENOENT: No such file or directory"),
    (guards.helper_facts(Path("/bench/helper/sandbench-exec-c0ffee"), "c" * 64,
                         "replaced while the sandbox started"),
     "replaced while the sandbox started"),
    (guards.helper_facts(Path("/elsewhere"), "c" * 64, None), "c" * 64),
    ({}, "not hashed"),
])
def test_the_helper_file_must_hash_to_the_locks_digest(host: dict, found: str) -> None:
    """Fail closed: a helper that was not hashed, or not the one mounted, is refused."""
    failed = _failed(guards.check_outside(POLICY, INSPECT, host))
    assert set(failed) == {"helper_digest"}
    assert (failed["helper_digest"].expected, failed["helper_digest"].found) == ("c" * 64, found)


def test_a_policy_without_a_locked_digest_fails_the_helper_guard() -> None:
    policy = GuardPolicy(**{**asdict(POLICY), "mounts": POLICY.mounts,
                                   "helper": {"source": POLICY.helper["source"], "sha256": ""}})
    host = guards.helper_facts(Path(POLICY.helper["source"]), "", None)
    assert "helper_digest" in _failed(guards.check_outside(policy, INSPECT, host))


def test_a_leaked_host_variable_and_the_docker_socket_are_caught() -> None:
    inspect = copy.deepcopy(INSPECT)
    inspect["Config"]["Env"].append("AWS_SECRET=x")
    inspect["Mounts"].append({"Type": "bind", "Source": "/var/run/docker.sock",
                              "Destination": "/var/run/docker.sock", "RW": True})
    failed = _failed(guards.check_outside(POLICY, inspect, HOST))
    assert {"env", "mounts", "docker_socket"} <= set(failed)


@pytest.mark.parametrize(("mutate", "guard"), [
    (lambda f, c: f.update(interfaces=["eth0", "lo"]), "interfaces"),
    (lambda f, c: f["routes_v4"].append("eth0 00000000 0100A8C0 0003 0 0 0 00000000 0 0 0"),
     "routes"),
    (lambda f, c: f["lookup"].update(ok=True, error=None), "name_lookup"),
    (lambda f, c: c.update(tcp_accepted=1), "loopback_tcp"),
    (lambda f, c: c.update(udp_received=1), "loopback_udp"),
    (lambda f, c: f["write"].update(ok=True, error=None), "root_writable"),
    (lambda f, c: f.update(uid=0), "uid"),
    (lambda f, c: f["status"].update(CapEff="00000000a80425fb"), "cap_eff"),
    (lambda f, c: f["status"].update(NoNewPrivs=0), "no_new_privs"),
    (lambda f, c: f["status"].update(Seccomp=0), "seccomp"),
    (lambda f, c: f["mounts"].append(_mount("/var/run/docker.sock")), "mount_list"),
    (lambda f, c: f["mounts"].pop(6), "mount_list"),
    (lambda f, c: f["mounts"][6].update(options="ro"), "mount_modes"),
    (lambda f, c: f["mounts"][0].update(options="rw"), "root_read_only_mount"),
    (lambda f, c: f["mounts"].pop(9), "mount_list"),
    (lambda f, c: f["mounts"][9].update(options="rw"), "mount_modes"),
    (lambda f, c: f.update(image_helpers=["/usr/local/bin/sandbench-exec"]), "image_helpers"),
    (lambda f, c: f.pop("image_helpers"), "image_helpers"),
])
def test_each_inside_guard_names_itself(mutate, guard: str) -> None:
    probe = copy.deepcopy(PROBE)
    mutate(probe["facts"], probe["canary"])
    assert guard in _failed(guards.check_inside(POLICY, probe))


def test_an_unreadable_probe_fails_closed() -> None:
    failed = _failed(guards.check_inside(POLICY, {}))
    assert {"interfaces", "name_lookup", "loopback_tcp", "uid", "cap_eff",
            "no_new_privs"} <= set(failed)


def _store(tmp_path: Path, inspect: dict, probe: dict | None) -> Path:
    folder = tmp_path / "run" / "guards" / "rg"
    results = guards.check_outside(POLICY, inspect, HOST)
    if probe is not None:
        results += guards.check_inside(POLICY, probe)
    guards.store(folder, POLICY, inspect, HOST, probe, results)
    return tmp_path / "run"


def test_audit_recomputes_the_stored_verdict_offline(tmp_path: Path) -> None:
    run = _store(tmp_path, INSPECT, PROBE)
    (arm,) = guards.audit(run)
    assert arm.ok and arm.matches_stored and arm.probed


def test_audit_notices_a_doctored_verdict(tmp_path: Path) -> None:
    bad = copy.deepcopy(INSPECT)
    bad["HostConfig"]["NetworkMode"] = "bridge"
    run = _store(tmp_path, bad, None)
    verdict = run / "guards" / "rg" / "verdict.json"
    doctored = [dict(r, ok=True) for r in json.loads(verdict.read_text())]
    verdict.write_text(json.dumps(doctored))
    (arm,) = guards.audit(run)
    assert not arm.ok and not arm.matches_stored and not arm.probed


def test_audit_needs_the_host_snapshot_of_the_helper(tmp_path: Path) -> None:
    run = _store(tmp_path, INSPECT, PROBE)
    (run / "guards" / "rg" / "host.json").write_text("{}")
    (arm,) = guards.audit(run)
    assert not arm.ok and not arm.matches_stored
    assert {r.guard for r in guards.failures(arm.results)} == {"helper_digest"}
    (run / "guards" / "rg" / "host.json").unlink()
    with pytest.raises(InputError, match="host.json"):
        guards.audit(run)


def test_audit_of_a_folder_that_is_not_a_run_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a sandbench run directory"):
        guards.audit(tmp_path)


def test_audit_of_a_corrupt_snapshot_names_the_file(tmp_path: Path) -> None:
    run = _store(tmp_path, INSPECT, PROBE)
    (run / "guards" / "rg" / "inspect.json").write_text("{not json")
    with pytest.raises(InputError, match="inspect.json"):
        guards.audit(run)


def test_policy_round_trips_through_json() -> None:
    again = GuardPolicy.from_json(json.loads(json.dumps(POLICY.to_json())), Path("p"))
    assert asdict(again) == asdict(POLICY)


def test_canary_counts_what_reaches_it() -> None:
    import socket
    with canary_mod.loopback_canary() as canary:
        socket.create_connection(("127.0.0.1", canary.port), timeout=2).close()
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.sendto(b"x", ("127.0.0.1", canary.port))
        udp.close()
        import time
        for _ in range(50):
            if canary.tcp_accepted and canary.udp_received:
                break
            time.sleep(0.05)
    assert canary.snapshot() == {"port": canary.port, "tcp_accepted": 1, "udp_received": 1}


def _with_mount(point: str, **changes: Any) -> dict[str, Any]:
    probe = copy.deepcopy(PROBE)
    for m in probe["facts"]["mounts"]:
        if m["mount_point"] == point:
            m.update(changes)
    return probe


@pytest.mark.parametrize(("point", "changes", "found"), [
    ("/state", {"size_bytes": (32 << 20) + 4096}, (32 << 20) + 4096),
    ("/state", {"size_bytes": None}, None),
    ("/corpus", {"size_bytes": "60"}, "60"),
])
def test_a_writable_mount_larger_than_its_bound_fails(point: str, changes: dict[str, Any],
                                                       found: Any) -> None:
    failed = _failed(guards.check_inside(POLICY, _with_mount(point, **changes)))
    assert set(failed) == {"mount_sizes"}
    assert failed["mount_sizes"].found[point] == found
    assert failed["mount_sizes"].expected == {"/corpus": f"<= {64 << 20}",
                                              "/state": f"<= {32 << 20}"}


def test_a_policy_recorded_before_mounts_were_bounded_checks_no_size(tmp_path: Path) -> None:
    """Runs stored before bounded mounts declare no size: the audit recomputes what their
    policy asked for, nothing more."""
    stored = POLICY.to_json()
    for m in stored["mounts"]:
        del m["size_bytes"]
    policy = GuardPolicy.from_json(stored, tmp_path / "policy.json")
    sizes = {r.guard: r for r in guards.check_inside(policy, PROBE)}["mount_sizes"]
    assert sizes.ok and sizes.expected == {}
    assert GuardPolicy.from_json(POLICY.to_json(), tmp_path / "p.json") == POLICY


def test_a_stored_mount_bound_that_is_not_a_positive_int_is_refused(tmp_path: Path) -> None:
    stored = POLICY.to_json()
    stored["mounts"][1]["size_bytes"] = True
    with pytest.raises(InputError, match=r"mounts\[1\]\.size_bytes"):
        GuardPolicy.from_json(stored, tmp_path / "policy.json")


def test_a_volume_mount_is_judged_by_its_name_and_a_bind_in_its_place_fails() -> None:
    """On an engine of another host the arm's file systems are the engine's volumes: the
    declared volume must be mounted as that volume, never a bind of some path."""
    policy = GuardPolicy(**{**asdict(POLICY), "mounts": [
        DeclaredMount("sandbench-r1-rg-corpus", "/corpus", False, 64 << 20, True),
        DeclaredMount("/bench/w/state", "/state", False, 32 << 20)]})
    inspect = copy.deepcopy(INSPECT)
    inspect["Mounts"][0] = {"Type": "volume", "Name": "sandbench-r1-rg-corpus",
                            "Source": "/var/lib/docker/volumes/sandbench-r1-rg-corpus/_data",
                            "Destination": "/corpus", "RW": True}
    assert list(_failed(guards.check_outside(policy, inspect, HOST))) == []
    inspect["Mounts"][0] = {"Type": "bind", "Destination": "/corpus", "RW": True,
                            "Source": "sandbench-r1-rg-corpus"}
    assert list(_failed(guards.check_outside(policy, inspect, HOST))) == ["mounts"]
    stored = policy.to_json()
    assert stored["mounts"][0]["volume"] is True and "volume" not in stored["mounts"][1]
    assert GuardPolicy.from_json(stored, Path("policy.json")) == policy
