"""The inside checks of the settings that the helper's probe proves from inside a container
(images/base/sandbench-exec.c, probe): each a function of the stored policy and the probe, so
that `audit` recomputes them offline. A check returns `Check` tuples (guard, expected, found,
ok; ok None meaning expected == found); which setting owns which is said by the table
(isolation/table.py). The limits in force are in `in_force`, the split uids in `separation`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.sandbox import runtimes
from orchestrator.isolation import in_force, separation
from orchestrator.isolation.values import EXECUTOR_CAP_MASK, Check, Probe

if TYPE_CHECKING:  # the policy only arrives as an argument
    from orchestrator.isolation.policy import GuardPolicy

PROBE_LOOKUP = "example.com"  # RFC 2606 documentation domain: resolvable only with a network
PROBE_WRITE = "/.sandbench-probe-root-write"

# Mount points the engine itself provides in every container (docker's defaults and its
# masked and read-only /proc and /sys paths; Podman masks /sys/dev/block too).
ENGINE_MOUNTS = {"/", "/proc", "/dev", "/dev/pts", "/dev/mqueue", "/dev/shm", "/sys",
                 "/sys/fs/cgroup", "/etc/resolv.conf", "/etc/hostname", "/etc/hosts",
                 "/dev/console", "/sys/dev/block"}
ENGINE_MOUNT_PREFIXES = ("/proc/", "/sys/fs/cgroup/", "/sys/firmware", "/sys/devices/virtual/",
                         "/dev/")


def _hex_zero(value: Any) -> bool:
    try:
        return int(str(value), 16) == 0
    except ValueError:
        return False


def _gvisor(policy: GuardPolicy) -> bool:
    return policy.runtime == runtimes.RUNSC


def _route_device(line: str) -> str:
    """The device of a /proc/net/route line (first field) or ipv6_route line (last field)."""
    fields = line.split()
    if not fields:
        return ""
    return fields[-1] if len(fields) == 10 and len(fields[0]) == 32 else fields[0]


def network(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """Only lo, no route off it, no name service, and nothing reaches the host's loopback
    (the host-side canary counts what arrives)."""
    facts, canary = probe.facts, probe.canary
    lookup = facts.get("lookup") or {}
    connect = facts.get("connect") or {}
    routes = [*(facts.get("routes_v4") or []), *(facts.get("routes_v6") or [])]
    off_lo = [r for r in routes if _route_device(r) != "lo"]
    return [
        ("interfaces", ["lo"], facts.get("interfaces"), None),
        ("routes", "only via lo", off_lo or "only via lo", None),
        ("name_lookup", f"{PROBE_LOOKUP} does not resolve", lookup.get("error") or "resolved",
         lookup.get("ok") is False),
        ("loopback_tcp", "connect to the host's 127.0.0.1 fails",
         connect.get("error") or "connected",
         connect.get("ok") is False and canary.get("tcp_accepted", 1) == 0),
        ("loopback_udp", "no datagram reaches the host's 127.0.0.1",
         f"{canary.get('udp_received', 'unknown')} datagram(s) received",
         canary.get("udp_received", 1) == 0),
    ]


def read_only_root(policy: GuardPolicy, probe: Probe) -> list[Check]:
    write = probe.facts.get("write") or {}
    by_point = {m.get("mount_point"): m for m in probe.facts.get("mounts") or []}
    root_opts = str((by_point.get("/") or {}).get("options") or "").split(",")
    return [("root_writable", "write to / fails", write.get("error") or "written",
             write.get("ok") is False),
            ("root_read_only_mount", "ro", "ro" if "ro" in root_opts else root_opts,
             "ro" in root_opts)]


def user(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """The tool's ids, and what the tool's uid can do to PID 1 (the executor's)."""
    uid, gid = policy.uid_gid
    facts = probe.facts
    return [("uid", uid, facts.get("uid"), facts.get("uid") == uid and uid != 0),
            ("gid", gid, facts.get("gid"), facts.get("gid") == gid),
            *separation.executor_checks(policy.executor_user, uid, facts)]


def _cap_bnd(policy: GuardPolicy, status: dict[str, Any]) -> Check:
    """The tool's bounding set: empty, or since the split exactly the executor's two (the
    tool holds neither: its other sets are 0, and no-new-privileges stops any gain)."""
    found = status.get("CapBnd")
    if policy.executor_user is None:
        return ("cap_bnd", "0", found, _hex_zero(found))
    mask = f"{EXECUTOR_CAP_MASK:016x}"
    try:
        ok = int(str(found), 16) == EXECUTOR_CAP_MASK
    except ValueError:
        ok = False
    return ("cap_bnd", f"{mask} (SETUID and SETGID)", found, ok)


def _cap_amb(status: dict[str, Any], gvisor: bool) -> Check:
    found = status.get("CapAmb")
    if gvisor and found is None:  # see UNDER_GVISOR
        return ("cap_amb", "0, or no line and CapPrm 0", f"no line, CapPrm {status.get('CapPrm')}",
                _hex_zero(status.get("CapPrm")))
    return ("cap_amb", "0", found, _hex_zero(found))


def capabilities(policy: GuardPolicy, probe: Probe) -> list[Check]:
    status = probe.status
    return [("cap_eff", "0", status.get("CapEff"), _hex_zero(status.get("CapEff"))),
            _cap_bnd(policy, status), _cap_amb(status, _gvisor(policy)),
            *separation.capability_checks(policy.executor_user, probe.facts)]


def no_new_privileges(policy: GuardPolicy, probe: Probe) -> list[Check]:
    status, by_prctl = probe.status, probe.facts.get("no_new_privs")
    found = status.get("NoNewPrivs")
    if _gvisor(policy) and found is None and by_prctl is not None:  # see UNDER_GVISOR
        return [("no_new_privs", "1, or no line and prctl 1", f"no line, prctl {by_prctl}",
                 by_prctl == 1)]
    if _gvisor(policy) and found is None:  # runs recorded before the probe asked prctl
        return [("no_new_privs", "1, or no line and CapBnd 0",
                 f"no line, CapBnd {status.get('CapBnd')}", _hex_zero(status.get("CapBnd")))]
    return [("no_new_privs", 1, found, None)]


def confinement(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """Mode 2 (the engine's profile) under runc; under runsc, since the split uids, mode 0
    (see UNDER_GVISOR: runsc no longer applies the engine's profile)."""
    expected = 0 if _gvisor(policy) and policy.executor_user is not None else 2
    return [("seccomp", expected, probe.status.get("Seccomp"), None)]


def _engine_mount(point: str) -> bool:
    return point in ENGINE_MOUNTS or point.startswith(ENGINE_MOUNT_PREFIXES)


def _within(size: Any, bound: int) -> bool:
    """A file system's size as the probe read it: a positive int no larger than its bound."""
    return isinstance(size, int) and not isinstance(size, bool) and 0 < size <= bound


def mounts(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """Only the declared mounts (and the engine's own), each in its mode and within its
    bound, and the tool's writes where it must write."""
    by_point = {m.get("mount_point"): m for m in probe.facts.get("mounts") or []}
    declared = {m.target: m for m in (*policy.mounts, policy.helper_mount)}
    expected_points = sorted([*declared, *policy.tmpfs])
    found_points = sorted(p for p in by_point if not _engine_mount(p) or p in declared
                          or p in policy.tmpfs)
    wrong_mode = sorted(t for t, m in declared.items() if t in by_point and
                        ("ro" in str(by_point[t].get("options")).split(",")) != m.read_only)
    bounds = {t: m.size_bytes for t, m in declared.items() if m.size_bytes is not None}
    sizes = {t: (by_point.get(t) or {}).get("size_bytes") for t in bounds}
    return [("mount_list", expected_points, found_points, None),
            ("mount_modes", [], wrong_mode, None),
            ("mount_sizes", {t: f"<= {b}" for t, b in sorted(bounds.items())},
             dict(sorted(sizes.items())), all(_within(sizes[t], b) for t, b in bounds.items())),
            *in_force.writable(policy.values, probe.facts)]


def helper(policy: GuardPolicy, probe: Probe) -> list[Check]:
    # Arm images carry no helper: one of their own is stale or meant to be mistaken for the
    # mounted one.
    return [("image_helpers", [], probe.facts.get("image_helpers"), None)]


def exec_channel(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """PID 1's stdin and stdout (the resident executor's channel) must not open for a
    process of the sandbox's uid, in either direction."""
    if policy.exec_path is None:
        return []
    fds = probe.facts.get("pid1_fds")
    tried = fds if isinstance(fds, dict) else {}
    keys = ("stdin_write", "stdin_read", "stdout_write", "stdout_read")
    opened = sorted(k for k in keys if not str(tried.get(k, "")).startswith("open: E"))
    return [("channel_private", "PID 1's stdin and stdout do not open",
             [f"{k}: {tried.get(k, 'not tried')}" for k in opened]
             or "PID 1's stdin and stdout do not open", not opened)]


def runtime(policy: GuardPolicy, probe: Probe) -> list[Check]:
    """The kernel the probe talked to is the declared runtime's (runs recorded before
    runtimes were declared carry no kernel guard)."""
    if policy.runtime is None:
        return []
    expected = GVISOR_KERNEL if policy.runtime == runtimes.RUNSC else HOST_KERNEL
    return [("kernel", expected, kernel_of(probe.facts), None)]


def memory(policy: GuardPolicy, probe: Probe) -> list[Check]:
    return in_force.memory(policy.values, probe.facts, _gvisor(policy))


def pids(policy: GuardPolicy, probe: Probe) -> list[Check]:
    return in_force.pids(policy.values, probe.facts, _gvisor(policy),
                         kernel_of(probe.facts) == GVISOR_KERNEL)


def cpus(policy: GuardPolicy, probe: Probe) -> list[Check]:
    return in_force.cpus(policy.values, probe.facts)


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


