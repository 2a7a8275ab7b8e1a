"""The isolation policy: what a sandbox must look like, checked from outside (the engine's
inspect, and the host's hash of the helper file it mounts) and from inside (the helper's
probe), and re-checked offline by `audit`.

The policy is plain data stored with the run, and the checks are pure functions of the
policy and the two snapshots, so an auditor on another machine recomputes every verdict
from the run directory alone. Fail closed: a guard that cannot be read is a failed guard.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from orchestrator import in_force, isolation, runtimes, separation
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_json, read_json
from orchestrator.isolation import HELPER_IDLE as HELPER_IDLE  # re-exported for the tests
from orchestrator.isolation import HELPER_PATH
from orchestrator.isolation_values import EXECUTOR_CAP_MASK
from orchestrator.shared_checks import check_schema, schema_problem

PROBE_LOOKUP = "example.com"  # RFC 2606 documentation domain: resolvable only with a network
PROBE_WRITE = "/.sandbench-probe-root-write"

# Mount points the engine itself provides in every container (docker's defaults and its
# masked and read-only /proc and /sys paths; Podman masks /sys/dev/block too).
ENGINE_MOUNTS = {"/", "/proc", "/dev", "/dev/pts", "/dev/mqueue", "/dev/shm", "/sys",
                 "/sys/fs/cgroup", "/etc/resolv.conf", "/etc/hostname", "/etc/hosts",
                 "/dev/console", "/sys/dev/block"}
ENGINE_MOUNT_PREFIXES = ("/proc/", "/sys/fs/cgroup/", "/sys/firmware", "/sys/devices/virtual/",
                         "/dev/")


@dataclass(frozen=True)
class GuardResult:
    guard: str
    side: str  # outside | inside
    expected: Any
    found: Any
    ok: bool


@dataclass(frozen=True)
class DeclaredMount:
    source: str
    target: str
    read_only: bool
    size_bytes: int | None = None  # absent in runs recorded before mounts were bounded
    volume: bool = False  # an engine's volume, `source` its name (an engine of another host)


@dataclass(frozen=True)
class GuardPolicy:
    """Everything a sandbox is checked against, resolved when it is created."""

    run_id: str
    arm: str
    image_id: str
    user: str
    env: list[str]
    mounts: list[DeclaredMount]
    labels: dict[str, str] = field(default_factory=dict)
    # The host file mounted at HELPER_PATH and the sha256 the image lock gives it.
    helper: dict[str, str] = field(default_factory=dict)
    # "resident" or "docker-exec"; None in runs recorded before the resident executor, whose
    # PID 1 was always `idle` and which carry no channel guards.
    exec_path: str | None = None
    # Each isolation setting's values (isolation.policy_values: tmpfs, memory_bytes, pids,
    # nano_cpus), stored beside the fields above.
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def resident(self) -> bool:
        return self.exec_path == isolation.RESIDENT

    @property
    def runtime(self) -> str | None:
        """runc or runsc; None in runs recorded before runtimes were declared (runc)."""
        return self.values.get("runtime")

    @property
    def executor_user(self) -> str | None:
        """PID 1's uid:gid, apart from the tool's (`user`); None in runs recorded before the
        split, where PID 1 and the tool shared the tool's uid."""
        return self.values.get("executor_user")

    @property
    def tmpfs(self) -> dict[str, str]:
        return dict(self.values.get("tmpfs") or {})

    def to_json(self) -> dict[str, Any]:
        """As stored: the settings' values as fields of their own; a bind mount is written as
        before volumes existed (no `volume` key)."""
        data = asdict(self)
        values = data.pop("values")
        data["mounts"] = [{k: v for k, v in m.items() if k != "volume" or v}
                          for m in data["mounts"]]
        return {**data, **values}

    @property
    def helper_mount(self) -> DeclaredMount:
        return DeclaredMount(self.helper.get("source", ""), HELPER_PATH, True)

    @classmethod
    def from_json(cls, data: Any, source: Path) -> GuardPolicy:
        """The stored policy, every field checked: the audit must fail on a bad key, never
        on a traceback."""
        if problem := schema_problem(data, POLICY_SCHEMA):
            if len(problem.where) == 3 and problem.where[0] == "mounts":
                _, index, key = problem.where
                raise _bad_member(source, int(index), str(key), problem.expected, problem.found)
            raise InputError.bad_value(source, problem.key, problem.expected, problem.found)
        named = {f.name for f in fields(cls)} - {"values", "mounts"}
        return cls(**{k: v for k, v in data.items() if k in named},
                   mounts=[DeclaredMount(**m) for m in data["mounts"]],
                   values={k: v for k, v in data.items() if k not in {*named, "mounts"}})

    @property
    def uid_gid(self) -> tuple[int, int]:
        uid, gid = self.user.split(":")
        return int(uid), int(gid)


POLICY_SCHEMA = "guard-policy.schema.json"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _within(size: Any, bound: int) -> bool:
    """A file system's size as the probe read it: a positive int no larger than its bound."""
    return _is_int(size) and 0 < size <= bound


def _bad_member(source: Path, index: int, key: str, expected: str, found: Any) -> InputError:
    """A bad field of one declared mount, named with the mount's index."""
    return InputError(f"{source}: mounts[{index}].{key}: expected {expected}, found {found!r}",
                      file=str(source), key=key, expected=expected, found=found)


def _result(guard: str, side: str, expected: Any, found: Any, ok: bool | None = None
            ) -> GuardResult:
    return GuardResult(guard, side, expected, found, expected == found if ok is None else ok)


def helper_facts(path: Path, sha256: str | None, error: str | None) -> dict[str, Any]:
    """The host-side snapshot: the helper file the sandbox mounted, as hashed on the host."""
    return {"helper": {"path": str(path), "sha256": sha256, "error": error}}


def check_outside(policy: GuardPolicy, inspect: dict[str, Any], host_facts: dict[str, Any]
                  ) -> list[GuardResult]:
    """Guards read from the engine's view of the container, and the host's own snapshot of
    the helper file it mounted: every isolation setting's outside checks, in the table's
    order (orchestrator/isolation.py)."""
    return [_result(guard, "outside", expected, found, ok) for guard, expected, found, ok
            in isolation.outside_checks(policy, inspect, host_facts)]


def _hex_zero(value: Any) -> bool:
    try:
        return int(str(value), 16) == 0
    except ValueError:
        return False


def _engine_mount(point: str) -> bool:
    return point in ENGINE_MOUNTS or point.startswith(ENGINE_MOUNT_PREFIXES)


def check_inside(policy: GuardPolicy, probe: dict[str, Any]) -> list[GuardResult]:
    """Guards read from the helper's probe inside the container, plus what the host-side
    loopback canary saw while the probe ran."""
    facts = probe.get("facts") or {}
    canary = probe.get("canary") or {}
    status = facts.get("status") or {}
    inside = "inside"
    uid, gid = policy.uid_gid
    lookup = facts.get("lookup") or {}
    connect = facts.get("connect") or {}
    write = facts.get("write") or {}
    mounts = facts.get("mounts") or []
    by_point = {m.get("mount_point"): m for m in mounts}
    root_opts = str((by_point.get("/") or {}).get("options") or "").split(",")
    routes = [*(facts.get("routes_v4") or []), *(facts.get("routes_v6") or [])]
    off_lo = [r for r in routes if _route_device(r) != "lo"]
    declared = {m.target: m for m in (*policy.mounts, policy.helper_mount)}
    expected_points = sorted([*declared, *policy.tmpfs])
    found_points = sorted(p for p in by_point if not _engine_mount(p) or p in declared
                          or p in policy.tmpfs)
    wrong_mode = sorted(t for t, m in declared.items() if t in by_point and
                        ("ro" in str(by_point[t].get("options")).split(",")) != m.read_only)
    bounds = {t: m.size_bytes for t, m in declared.items() if m.size_bytes is not None}
    sizes = {t: (by_point.get(t) or {}).get("size_bytes") for t in bounds}
    gvisor = policy.runtime == runtimes.RUNSC
    return [
        _result("interfaces", inside, ["lo"], facts.get("interfaces")),
        _result("routes", inside, "only via lo", off_lo or "only via lo"),
        _result("name_lookup", inside, f"{PROBE_LOOKUP} does not resolve",
                lookup.get("error") or "resolved", ok=lookup.get("ok") is False),
        _result("loopback_tcp", inside, "connect to the host's 127.0.0.1 fails",
                connect.get("error") or "connected", ok=connect.get("ok") is False
                and canary.get("tcp_accepted", 1) == 0),
        _result("loopback_udp", inside, "no datagram reaches the host's 127.0.0.1",
                f"{canary.get('udp_received', 'unknown')} datagram(s) received",
                ok=canary.get("udp_received", 1) == 0),
        _result("root_writable", inside, "write to / fails", write.get("error") or "written",
                ok=write.get("ok") is False),
        _result("root_read_only_mount", inside, "ro", "ro" if "ro" in root_opts else root_opts,
                ok="ro" in root_opts),
        _result("uid", inside, uid, facts.get("uid"), ok=facts.get("uid") == uid and uid != 0),
        _result("gid", inside, gid, facts.get("gid"), ok=facts.get("gid") == gid),
        _result("cap_eff", inside, "0", status.get("CapEff"), ok=_hex_zero(status.get("CapEff"))),
        _cap_bnd(policy, status),
        _cap_amb(status, gvisor),
        _no_new_privs(status, gvisor, facts.get("no_new_privs")),
        _seccomp(policy, status),
        _result("mount_list", inside, expected_points, found_points),
        _result("mount_modes", inside, [], wrong_mode),
        _result("mount_sizes", inside, {t: f"<= {b}" for t, b in sorted(bounds.items())},
                dict(sorted(sizes.items())),
                ok=all(_within(sizes[t], b) for t, b in bounds.items())),
        # Arm images carry no helper: one of their own is stale or meant to be mistaken
        # for the mounted one.
        _result("image_helpers", inside, [], facts.get("image_helpers")),
    ] + _channel_private(policy, facts) + _kernel(policy, facts) + [
        _result(guard, inside, expected, found, ok) for guard, expected, found, ok
        in separation.checks(policy.executor_user, uid, facts)
        + in_force.checks(policy.values, facts, gvisor, kernel_of(facts) == GVISOR_KERNEL)]


def _cap_bnd(policy: GuardPolicy, status: dict[str, Any]) -> GuardResult:
    """The tool's bounding set: empty, or since the split exactly the executor's two (the
    tool holds neither: its other sets are 0, and no-new-privileges stops any gain)."""
    found = status.get("CapBnd")
    if policy.executor_user is None:
        return _result("cap_bnd", "inside", "0", found, ok=_hex_zero(found))
    mask = f"{EXECUTOR_CAP_MASK:016x}"
    try:
        ok = int(str(found), 16) == EXECUTOR_CAP_MASK
    except ValueError:
        ok = False
    return _result("cap_bnd", "inside", f"{mask} (SETUID and SETGID)", found, ok=ok)


def _channel_private(policy: GuardPolicy, facts: dict[str, Any]) -> list[GuardResult]:
    """PID 1's stdin and stdout (the resident executor's channel) must not open for a
    process of the sandbox's uid, in either direction."""
    if policy.exec_path is None:
        return []
    fds = facts.get("pid1_fds")
    tried = fds if isinstance(fds, dict) else {}
    keys = ("stdin_write", "stdin_read", "stdout_write", "stdout_read")
    opened = sorted(k for k in keys if not str(tried.get(k, "")).startswith("open: E"))
    return [_result("channel_private", "inside", "PID 1's stdin and stdout do not open",
                    [f"{k}: {tried.get(k, 'not tried')}" for k in opened]
                    or "PID 1's stdin and stdout do not open", ok=not opened)]


# What each inside guard means under gVisor (runsc), where the probe talks to the sandbox's
# own kernel, not the host's: every guard runs there, and where gVisor's kernel prints a fact
# differently the guard says what stands for it. A unit test holds this table to the guards.
UNDER_GVISOR = {
    "interfaces": "the sandbox kernel's network stack has only lo (runsc --network=none)",
    "routes": "its routing tables: none, or only via lo",
    "name_lookup": "as under runc: no name resolves without a network",
    "loopback_tcp": "its 127.0.0.1 is its own: the host's canary sees no connection",
    "loopback_udp": "its 127.0.0.1 is its own: the host's canary sees no datagram",
    "root_writable": "the write to / fails (gVisor says EACCES where Linux says EROFS)",
    "root_read_only_mount": "the root its gofer serves is mounted ro",
    "uid": "as under runc: the declared non-root uid, the probe's after it took the tool's ids",
    "gid": "as under runc: the declared gid",
    "cap_eff": "the capability sets the sandbox kernel keeps for the process: 0",
    "cap_bnd": "the bounding set the sandbox kernel keeps: 0, or since the split uids exactly "
               "SETUID and SETGID (the executor's), of which the tool holds neither",
    "cap_amb": "gVisor (2022-12) prints no CapAmb line: the ambient set is a subset of the "
               "permitted one, so CapPrm 0 stands for it",
    "no_new_privs": "gVisor (2022-12) prints no NoNewPrivs line: what stands for it is the "
                    "flag as prctl(PR_GET_NO_NEW_PRIVS) returns it to the probe, or in runs "
                    "recorded before the probe read it, the outside no_new_privileges guard "
                    "with CapBnd 0",
    "seccomp": "mode 0: runsc runs without --oci-seccomp (its 2024-07 build answers clone3 "
               "with EPERM instead of the profile's ENOSYS, so no glibc program could start "
               "a thread), so the engine's profile does not filter the tool's calls into the "
               "sandbox kernel; the Sentry itself runs under gVisor's own host filter. Runs "
               "recorded before the split uids ran runsc with --oci-seccomp and read 2",
    "mount_list": "the mounts the sandbox kernel shows: the declared ones and its own",
    "mount_modes": "each declared mount's ro/rw as the sandbox kernel mounted it",
    "mount_sizes": "each bounded mount's size, as its gofer reports the host file system's",
    "image_helpers": "as under runc: no helper of the image's own",
    "channel_private": "PID 1's stdin and stdout do not open for the tool's uid. gVisor "
                       "ignores PR_SET_DUMPABLE, so with one uid they opened (a tool could "
                       "write frames into the executor's channel); with the split uids they "
                       "are refused because they are uid 0's, mode 0600",
    "kernel": "the sandbox kernel is gVisor's, not the host's",
    **separation.UNDER_GVISOR,
    **in_force.UNDER_GVISOR,
}
# gVisor's Sentry serves every file system of the container through its gofer: its root is
# a 9p mount over a file descriptor. No Linux container root is one (docker mounts overlay
# or its storage driver's), and a process without CAP_SYS_ADMIN cannot mount one.
GVISOR_ROOT = ("9p", "trans=fd")
HOST_KERNEL = "the host's Linux kernel"
GVISOR_KERNEL = "gVisor's kernel (the Sentry)"


def kernel_of(facts: dict[str, Any]) -> str:
    """Which kernel answered the probe, from two facts only the kernel writes: the root mount
    in /proc/self/mountinfo (gVisor's gofer, a 9p mount over a file descriptor, or not) and
    /proc/self/status (Linux has printed NoNewPrivs since 4.10; gVisor 2022-12 does not).
    The probe is the host's static helper, reading /proc before any tool command ran: the
    image cannot stand in for it, and no unprivileged process can mount a root or rewrite
    the kernel's status lines. Both facts must agree, else the kernel is unknown."""
    root: dict[str, Any] = next(
        (m for m in facts.get("mounts") or [] if m.get("mount_point") == "/"), {})
    gofer = (root.get("fstype") == GVISOR_ROOT[0]
             and GVISOR_ROOT[1] in str(root.get("super_options") or "").split(","))
    nnp_line = (facts.get("status") or {}).get("NoNewPrivs") is not None
    if gofer and not nnp_line:
        return GVISOR_KERNEL
    if not gofer and nnp_line:
        return HOST_KERNEL
    return (f"unknown (root {root.get('fstype')!r} {'over' if gofer else 'not over'} a "
            f"gofer; NoNewPrivs line {'present' if nnp_line else 'absent'})")


def _kernel(policy: GuardPolicy, facts: dict[str, Any]) -> list[GuardResult]:
    """The kernel the probe talked to is the declared runtime's (runs recorded before
    runtimes were declared carry no kernel guard)."""
    if policy.runtime is None:
        return []
    expected = GVISOR_KERNEL if policy.runtime == runtimes.RUNSC else HOST_KERNEL
    return [_result("kernel", "inside", expected, kernel_of(facts))]


def _cap_amb(status: dict[str, Any], gvisor: bool) -> GuardResult:
    found = status.get("CapAmb")
    if gvisor and found is None:  # see UNDER_GVISOR
        return _result("cap_amb", "inside", "0, or no line and CapPrm 0",
                       f"no line, CapPrm {status.get('CapPrm')}",
                       ok=_hex_zero(status.get("CapPrm")))
    return _result("cap_amb", "inside", "0", found, ok=_hex_zero(found))


def _seccomp(policy: GuardPolicy, status: dict[str, Any]) -> GuardResult:
    """Mode 2 (the engine's profile) under runc; under runsc, since the split uids, mode 0
    (see UNDER_GVISOR: runsc no longer applies the engine's profile)."""
    if policy.runtime == runtimes.RUNSC and policy.executor_user is not None:
        return _result("seccomp", "inside", 0, status.get("Seccomp"))
    return _result("seccomp", "inside", 2, status.get("Seccomp"))


def _no_new_privs(status: dict[str, Any], gvisor: bool, by_prctl: Any) -> GuardResult:
    found = status.get("NoNewPrivs")
    if gvisor and found is None and by_prctl is not None:  # see UNDER_GVISOR
        return _result("no_new_privs", "inside", "1, or no line and prctl 1",
                       f"no line, prctl {by_prctl}", ok=by_prctl == 1)
    if gvisor and found is None:  # runs recorded before the probe asked prctl
        return _result("no_new_privs", "inside", "1, or no line and CapBnd 0",
                       f"no line, CapBnd {status.get('CapBnd')}",
                       ok=_hex_zero(status.get("CapBnd")))
    return _result("no_new_privs", "inside", 1, found)


def _route_device(line: str) -> str:
    """The device of a /proc/net/route line (first field) or ipv6_route line (last field)."""
    fields = line.split()
    if not fields:
        return ""
    return fields[-1] if len(fields) == 10 and len(fields[0]) == 32 else fields[0]


def failures(results: list[GuardResult]) -> list[GuardResult]:
    return [r for r in results if not r.ok]


# -- snapshots on disk ------------------------------------------------------------------------

def store(folder: Path, policy: GuardPolicy, inspect: dict[str, Any], host_snapshot: dict[str, Any],
          probe: dict[str, Any] | None, results: list[GuardResult]) -> None:
    """The snapshots and the verdict, so `audit` can recompute it without an engine."""
    atomic_write_json(folder / "policy.json", policy.to_json())
    atomic_write_json(folder / "inspect.json", inspect)
    atomic_write_json(folder / "host.json", host_snapshot)
    if probe is not None:
        atomic_write_json(folder / "probe.json", probe)
    atomic_write_json(folder / "verdict.json", [asdict(r) for r in results])


@dataclass(frozen=True)
class AuditedArm:
    arm: str
    folder: Path
    results: list[GuardResult]
    matches_stored: bool
    probed: bool

    @property
    def ok(self) -> bool:
        return self.probed and self.matches_stored and not failures(self.results)


def audit(run_dir: Path) -> list[AuditedArm]:
    """Recompute every arm's guards from the stored snapshots, offline."""
    root = run_dir / "guards"
    if not root.is_dir():
        raise InputError(f"{run_dir}: no guards/ folder: not a sandbench run directory",
                         file=str(run_dir))
    audited = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        policy = GuardPolicy.from_json(read_json(folder / "policy.json"), folder / "policy.json")
        inspect = check_schema(folder / "inspect.json", read_json(folder / "inspect.json"),
                               "guard-inspect.schema.json")
        host_snapshot = check_schema(folder / "host.json", read_json(folder / "host.json"),
                                     "guard-host.schema.json")
        results = check_outside(policy, inspect, host_snapshot)
        probed = (folder / "probe.json").exists()
        if probed:
            probe = check_schema(folder / "probe.json", read_json(folder / "probe.json"),
                                 "guard-probe.schema.json")
            results += check_inside(policy, probe)
        stored = read_json(folder / "verdict.json")
        recomputed = json.loads(json.dumps([asdict(r) for r in results]))
        audited.append(AuditedArm(folder.name, folder, results, recomputed == stored, probed))
    return audited
